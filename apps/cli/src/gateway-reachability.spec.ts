// Proves the reachability check on real loopback sockets: a listening port passes, a closed port
// fails at once with UNAVAILABLE naming the gateway (exit code 3), and the connection the check
// opened is closed again.
import * as net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exitCodeFor } from './cli-errors';
import { checkGatewayReachable } from './gateway-reachability';

let server: net.Server;
let port: number;
const closed: Promise<void>[] = [];

beforeAll(async () => {
  server = net.createServer((socket) => {
    closed.push(new Promise((resolve) => socket.once('close', () => resolve())));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as net.AddressInfo).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('checkGatewayReachable', () => {
  it('passes for a listening gateway and closes its connection', async () => {
    await checkGatewayReachable(`127.0.0.1:${port}`);
    await expect.poll(() => closed.length, { timeout: 2_000 }).toBe(1);
    await closed[0];
  });

  it('fails at once with UNAVAILABLE for a closed port', async () => {
    const startedAtMs = Date.now();
    const error = await checkGatewayReachable('127.0.0.1:1').catch((failure: unknown) => failure);
    expect(Date.now() - startedAtMs).toBeLessThan(2_000);
    expect(error).toMatchObject({ code: 'UNAVAILABLE' });
    expect((error as Error).message).toMatch(
      /^cannot reach the gateway at 127\.0\.0\.1:1: .*ECONNREFUSED/,
    );
    expect(exitCodeFor(error)).toBe(3);
  });
});

// Proves client authentication on `spool dev --secure` with real processes and sockets: the
// Kafka listener is SASL_SSL and the gateway's gRPC requires credentials. The admin user of
// client.properties creates a user with `spool user create` (the CLI over gRPC with SASL
// credentials); kcat (librdkafka) as that user produces with SCRAM-SHA-256, and as the admin
// consumes the same records with PLAIN and with SCRAM-SHA-512; a wrong password and an unknown
// user are refused with the same message and write nothing; plaintext to the TLS port and a
// Metadata request before SASL authentication get no Kafka answer; on gRPC the SDK's `sasl`
// works (and the CLI's sasl.* keys of client.properties), a wrong password is
// SASL_AUTHENTICATION_FAILED; a deleted user is refused; every
// failure is counted by listener and mechanism in the gateway's metrics.
import { readClientProperties, Spool } from '@spool/client';
import type { SpoolError } from '@spool/common';
import { execFile } from 'node:child_process';
import net from 'node:net';
import * as path from 'node:path';
import tls from 'node:tls';
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from './support/cli-process';
import { scrape, sumOf } from './support/prometheus-scrape';
import { startSpoolDev, type SpoolDevProcess } from './support/spool-dev-process';

const kcatTimeoutMs = 20_000;

let dev: SpoolDevProcess;
let clientProperties: string;
let properties: Map<string, string>;
let kafkaPort: number;
let metricsPort: number;
let caFile: string;

beforeAll(async () => {
  dev = await startSpoolDev(['--secure', '--nodes', '1']);
  clientProperties = path.join(dev.dataDirectory, 'client.properties');
  properties = new Map(
    readFileSync(clientProperties, 'utf8')
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  caFile = properties.get('ssl.ca.location')!;
  const gateway = dev.processes.find((entry) => entry.role === 'gateway')!;
  kafkaPort = (gateway.ports as { kafka?: number }).kafka!;
  metricsPort = gateway.ports.metrics;
}, 60_000);

afterAll(async () => {
  await dev?.stop();
});

interface KcatUser {
  readonly mechanism: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512';
  readonly username: string;
  readonly password: string;
}

/** kcat over SASL_SSL as `user`; resolves with stdout, rejects with stderr on a non-0 exit. */
function kcat(user: KcatUser, args: readonly string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'kcat',
      [
        ...['-b', `localhost:${kafkaPort}`],
        ...['-X', 'security.protocol=SASL_SSL'],
        ...['-X', `ssl.ca.location=${caFile}`],
        ...['-X', `sasl.mechanisms=${user.mechanism}`],
        ...['-X', `sasl.username=${user.username}`],
        ...['-X', `sasl.password=${user.password}`],
        ...args,
      ],
      { timeout: kcatTimeoutMs },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`kcat ${args.join(' ')} failed: ${stderr}`));
        else resolve(stdout);
      },
    );
    if (input !== undefined) child.stdin!.end(input);
  });
}

function admin(mechanism: KcatUser['mechanism']): KcatUser {
  return {
    mechanism,
    username: properties.get('sasl.username')!,
    password: properties.get('sasl.password')!,
  };
}

function cli(argv: readonly string[], input = '') {
  return runCli(['--command-config', clientProperties, ...argv], input);
}

async function highWatermarks(topic: string): Promise<string[]> {
  const spool = new Spool({ ...readClientProperties(clientProperties), logLevel: 'silent' });
  try {
    const offsets = await spool.admin().fetchTopicOffsets(topic);
    return offsets.map((entry) => String(entry.high));
  } finally {
    await spool.close();
  }
}

/** Writes `bytes` on `socket`; resolves with everything received once the peer closed it. */
function exchange(socket: net.Socket, bytes: Buffer): Promise<Buffer> {
  return new Promise((resolve) => {
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(Buffer.concat(received)));
    socket.write(bytes);
    setTimeout(() => socket.destroy(), 10_000).unref();
  });
}

/** A Kafka request with header v1 (client id "raw") and `body`, size-prefixed. */
function requestFrame(
  apiKey: number,
  apiVersion: number,
  correlationId: number,
  body: Buffer,
): Buffer {
  const header = Buffer.alloc(8 + 2 + 3);
  header.writeInt16BE(apiKey, 0);
  header.writeInt16BE(apiVersion, 2);
  header.writeInt32BE(correlationId, 4);
  header.writeInt16BE(3, 8);
  header.write('raw', 10);
  const size = Buffer.alloc(4);
  size.writeInt32BE(header.length + body.length, 0);
  return Buffer.concat([size, header, body]);
}

/** ApiVersions v0 (an empty body) and Metadata v0 (an empty topic list: every topic). */
const apiVersionsRequest = requestFrame(18, 0, 1, Buffer.alloc(0));
const metadataRequest = requestFrame(3, 0, 7, Buffer.alloc(4));

describe('client authentication on spool dev --secure', () => {
  it('serves a user created by spool user with SCRAM and PLAIN through kcat', async () => {
    expect(properties.get('security.protocol')).toBe('SASL_SSL');
    const created = await cli([
      'user',
      'create',
      'alice',
      '--password',
      'alice-secret-1',
      '--mechanism',
      'SCRAM-SHA-256',
    ]);
    expect(created.exitCode, created.stderr).toBe(0);
    const topic = await cli(['topic', 'create', 'sasl-orders', '--partitions', '1']);
    expect(topic.exitCode, topic.stderr).toBe(0);
    const listed = await cli(['user', 'list', '--json']);
    expect(JSON.parse(listed.stdout)).toMatchObject({
      users: expect.arrayContaining([
        { user: 'alice', credentials: [{ mechanism: 'SCRAM-SHA-256', iterations: 4096 }] },
      ]),
    });

    const alice: KcatUser = {
      mechanism: 'SCRAM-SHA-256',
      username: 'alice',
      password: 'alice-secret-1',
    };
    // spool dev --secure enforces ACLs: alice is authenticated but may not write yet, and the
    // refused produce writes nothing.
    await expect(kcat(alice, ['-P', '-t', 'sasl-orders', '-p', '0'], 'refused\n')).rejects.toThrow(
      /authorization failed/i,
    );
    expect(await highWatermarks('sasl-orders')).toEqual(['0']);
    const granted = await cli([
      ...['acl', 'create', '--allow-principal', 'User:alice'],
      ...['--operation', 'Write', '--operation', 'Describe', '--topic', 'sasl-orders'],
    ]);
    expect(granted.exitCode, granted.stderr).toBe(0);
    await kcat(alice, ['-P', '-t', 'sasl-orders', '-p', '0'], 'one\ntwo\nthree\n');
    for (const mechanism of ['PLAIN', 'SCRAM-SHA-512'] as const) {
      const consumed = await kcat(admin(mechanism), [
        '-C',
        '-t',
        'sasl-orders',
        '-o',
        'beginning',
        '-e',
        '-q',
      ]);
      expect(consumed.split('\n').filter(Boolean)).toEqual(['one', 'two', 'three']);
    }
  });

  it('refuses a wrong password and an unknown user alike, and nothing is written', async () => {
    const before = await highWatermarks('sasl-orders');
    const failures: string[] = [];
    for (const user of [
      { mechanism: 'SCRAM-SHA-256', username: 'alice', password: 'wrong' },
      { mechanism: 'SCRAM-SHA-256', username: 'mallory', password: 'alice-secret-1' },
      { mechanism: 'PLAIN', username: 'alice', password: 'wrong' },
    ] as const) {
      const error = await kcat(user, ['-P', '-t', 'sasl-orders', '-p', '0'], 'intruder\n').catch(
        (caught: Error) => caught,
      );
      expect(error).toBeInstanceOf(Error);
      failures.push((error as Error).message);
    }
    expect(failures[0]).toMatch(
      /Authentication failed.*invalid credentials with SASL mechanism SCRAM-SHA-256/,
    );
    expect(failures[1]).toMatch(
      /Authentication failed.*invalid credentials with SASL mechanism SCRAM-SHA-256/,
    );
    expect(failures[2]).toMatch(
      /Authentication failed.*invalid credentials with SASL mechanism PLAIN/,
    );
    expect(await highWatermarks('sasl-orders')).toEqual(before);
    const scraped = [await scrape(metricsPort)];
    expect(
      sumOf(scraped, 'spool_authentication_failures_total', {
        listener: 'kafka',
        mechanism: 'SCRAM-SHA-256',
      }),
    ).toBeGreaterThanOrEqual(2);
    expect(
      sumOf(scraped, 'spool_authentication_failures_total', {
        listener: 'kafka',
        mechanism: 'PLAIN',
      }),
    ).toBeGreaterThanOrEqual(1);
  });

  it('answers neither plaintext on the TLS port nor Metadata before SASL authentication', async () => {
    const plain = await exchange(net.connect(kafkaPort, '127.0.0.1'), apiVersionsRequest);
    // Whatever comes back is a TLS alert, never a Kafka frame for correlation id 1.
    expect(plain.length < 8 || plain.readInt32BE(4) !== 1).toBe(true);

    const secure = tls.connect({
      port: kafkaPort,
      host: '127.0.0.1',
      ca: readFileSync(caFile),
      servername: 'localhost',
    });
    await new Promise<void>((resolve, reject) => {
      secure.once('secureConnect', () => resolve());
      secure.once('error', reject);
    });
    const beforeSasl = await exchange(secure, metadataRequest);
    expect(beforeSasl.length).toBe(0);
  });

  it('authenticates gRPC calls with the SDK sasl option and refuses a wrong password', async () => {
    const base = readClientProperties(clientProperties);
    // The gateway's gRPC asks for a client certificate (ssl.client.auth=required); the
    // credentials decide the principal, and a wrong password is refused whatever the certificate.
    const withUser = (password: string): Spool =>
      new Spool({
        brokers: base.brokers!,
        ssl: base.ssl!,
        sasl: { mechanism: 'scram-sha-256', username: 'alice', password },
        logLevel: 'silent',
      });
    const good = withUser('alice-secret-1');
    try {
      // The call runs as User:alice: refused until an ACL lets alice describe the cluster.
      const refused = (await good
        .admin()
        .describeCluster()
        .catch((caught: unknown) => caught)) as SpoolError;
      expect(refused.code).toBe('CLUSTER_AUTHORIZATION_FAILED');
      expect(refused.message).toMatch(/User:alice/);
      const granted = await cli([
        ...['acl', 'create', '--allow-principal', 'User:alice'],
        ...['--operation', 'Describe', '--cluster'],
      ]);
      expect(granted.exitCode, granted.stderr).toBe(0);
      expect((await good.admin().describeCluster()).brokers.length).toBe(1);
      // The CLI takes its user from client.properties' sasl.* keys (the certificate only opens
      // the TLS handshake): as alice it may list ACLs (Describe on the cluster, granted above)
      // and may not create a topic.
      const aliceProperties = path.join(dev.dataDirectory, 'alice.properties');
      writeFileSync(
        aliceProperties,
        readFileSync(clientProperties, 'utf8')
          .replace(/^sasl\.username=.*$/m, 'sasl.username=alice')
          .replace(/^sasl\.password=.*$/m, 'sasl.password=alice-secret-1'),
      );
      const listed = await runCli(['--command-config', aliceProperties, 'acl', 'list']);
      expect(listed.exitCode, listed.stderr).toBe(0);
      const created = await runCli([
        ...['--command-config', aliceProperties, 'topic', 'create', 'alice-may-not'],
        ...['--partitions', '1', '--replication-factor', '1'],
      ]);
      expect(created.exitCode).toBe(1);
      expect(created.stderr).toMatch(/AUTHORIZATION_FAILED/);
    } finally {
      await good.close();
    }
    const bad = withUser('wrong');
    try {
      const error = (await bad
        .admin()
        .describeCluster()
        .catch((caught: unknown) => caught)) as SpoolError;
      expect(error.code).toBe('SASL_AUTHENTICATION_FAILED');
    } finally {
      await bad.close();
    }
    const anonymous = new Spool({
      brokers: base.brokers!,
      ssl: { ca: readFileSync(caFile) },
      logLevel: 'silent',
    });
    try {
      // No credentials and no client certificate.
      const error = (await anonymous
        .admin()
        .describeCluster()
        .catch((caught: unknown) => caught)) as SpoolError;
      expect(['SASL_AUTHENTICATION_FAILED', 'UNAVAILABLE']).toContain(error.code);
    } finally {
      await anonymous.close();
    }
    const scraped = [await scrape(metricsPort)];
    expect(
      sumOf(scraped, 'spool_authentication_failures_total', { listener: 'grpc' }),
    ).toBeGreaterThanOrEqual(1);
  });

  it('refuses a user once spool user delete removed it', async () => {
    const deleted = await cli(['user', 'delete', 'alice']);
    expect(deleted.exitCode, deleted.stderr).toBe(0);
    const alice: KcatUser = {
      mechanism: 'SCRAM-SHA-256',
      username: 'alice',
      password: 'alice-secret-1',
    };
    // The gateway learns of the deletion from the metadata stream, a moment after the answer.
    await vi.waitFor(() => expect(kcat(alice, ['-L'])).rejects.toThrow(/Authentication failed/), {
      timeout: 15_000,
      interval: 500,
    });
    const listed = await cli(['user', 'list', '--json']);
    expect(
      (JSON.parse(listed.stdout) as { users: { user: string }[] }).users.map((entry) => entry.user),
    ).toEqual(['admin']);
  });
});

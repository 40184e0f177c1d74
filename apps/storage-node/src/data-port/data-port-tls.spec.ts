// Proves the data port under TLS (security.protocol=SSL) over real loopback sockets, with
// certificates from the development CA: a peer with a service's certificate fetches records
// byte-exact (large enough for the copy path, since sendfile cannot write into TLS); a client
// certificate of the same CA without a service role, a peer without a certificate and a
// plaintext peer are each refused and counted (spool_data_port_connections_refused_total),
// and no request of theirs reaches the handler.
import { TransportSecurity, writeDevelopmentCertificates } from '@spool/common';
import { DataPortClient } from '@spool/protocol';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { DataPortHandlers } from './data-port-handlers';
import {
  createSegmentFixture,
  fetchRequestFor,
  partitionResult,
  ReleaseTracker,
  slicesOf,
  startServer,
  type SegmentFixture,
} from '../testing/data-port';

const directory = mkdtempSync(path.join(tmpdir(), 'spool-data-port-tls-'));
const certificates = writeDevelopmentCertificates(directory, { hosts: ['127.0.0.1'] });
/** Enough batches that a response is past inlineCopyBytesMax and streams in chunks. */
const fixture: SegmentFixture = createSegmentFixture(400);
const tracker = new ReleaseTracker();
const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  expect(tracker.released).toBe(tracker.issued);
});
afterAll(() => {
  fixture.remove();
  rmSync(directory, { recursive: true, force: true });
});

function security(files: Parameters<typeof TransportSecurity.load>[0]): TransportSecurity {
  const loaded = TransportSecurity.load(files, {
    clientAuthentication: 'required',
    reloadIntervalMs: 0,
  });
  cleanups.push(() => loaded.close());
  return loaded;
}

let fetchesHandled = 0;
const handlers: DataPortHandlers = {
  fetch: async (request) => {
    fetchesHandled += 1;
    return tracker.result(
      request.partitions.map((requested) =>
        partitionResult(requested.topic, requested.partition, slicesOf(fixture, 0, 400), {
          highWatermark: 400n,
          logEndOffset: 400n,
        }),
      ),
    );
  },
  offsetForLeaderEpoch: async () => ({ partitions: [] }),
};

async function startTlsServer(): Promise<{ port: number; registry: Registry }> {
  const registry = new Registry();
  const { server, port } = await startServer({
    handlers,
    registry,
    transportSecurity: security(certificates.services['storage-node']),
  });
  cleanups.push(() => server.close(1_000));
  return { port, registry };
}

describe('DataPortServer under TLS', () => {
  it("serves a service's certificate, byte-exact through the copy path", async () => {
    const { port } = await startTlsServer();
    const follower = security(certificates.services['storage-node']);
    const client = await DataPortClient.connect('127.0.0.1', port, {
      tls: follower.tlsConnectOptions(),
    });
    cleanups.push(() => client.close());
    const response = await client.fetch(
      fetchRequestFor([{ topic: 'orders', partition: 0, fetchOffset: 0n }]),
      { timeoutMs: 5_000 },
    );
    expect(response.partitions[0]?.records.length).toBeGreaterThan(64 * 1024);
    expect(response.partitions[0]?.records.equals(fixture.content)).toBe(true);
  });

  it('refuses a client certificate, no certificate and plaintext, before any request', async () => {
    const { port, registry } = await startTlsServer();
    fetchesHandled = 0;
    const attempt = async (options: Parameters<typeof DataPortClient.connect>[2]) => {
      const client = await DataPortClient.connect('127.0.0.1', port, {
        ...options,
        connectTimeoutMs: 3_000,
      }).catch((error: unknown) => error as Error);
      if (client instanceof Error) return client;
      cleanups.push(() => client.close());
      return client
        .fetch(fetchRequestFor([{ topic: 'orders', partition: 0, fetchOffset: 0n }]), {
          timeoutMs: 3_000,
        })
        .then(
          () => new Error('fetched'),
          (error: unknown) => error as Error,
        );
    };
    const clientCertificate = await attempt({
      tls: security(certificates.client).tlsConnectOptions(),
    });
    expect(clientCertificate.message).not.toBe('fetched');
    const noCertificate = await attempt({
      tls: security({ caFile: certificates.caFile }).tlsConnectOptions(),
    });
    expect(noCertificate.message).not.toBe('fetched');
    const plaintext = await attempt({});
    expect(plaintext.message).not.toBe('fetched');
    expect(fetchesHandled).toBe(0);
    await vi.waitFor(
      async () =>
        expect(await registry.metrics()).toContain('spool_data_port_connections_refused_total 3'),
      { timeout: 3_000 },
    );
  });
});

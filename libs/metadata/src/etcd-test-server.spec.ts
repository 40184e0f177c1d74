// Proves the etcd test helper with a 3-member cluster on free loopback ports, and the etcd store
// through member failures: with one member of three down at a time (SIGKILL, restart, then the
// next), writes go on (retrying retriable errors, as a controller does) and a watch, which must
// reconnect when its member dies, sees exactly the revisions a replay from history sees; and with
// every member down, a lease is suspended within its TTL and lost suspendedTtlsMax TTLs later.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isMetadataStoreError } from './errors';
import { suspendedTtlsMax } from './etcd-lease';
import { EtcdMetadataStore } from './etcd-metadata-store';
import { startEtcdCluster, type EtcdTestCluster } from './testing';

let cluster: EtcdTestCluster;

beforeAll(async () => {
  cluster = await startEtcdCluster(3);
});

afterAll(async () => {
  await cluster?.stop();
});

describe('startEtcdCluster', () => {
  it('starts three members on distinct loopback ports that form one cluster', async () => {
    expect(cluster.members.map((member) => member.running)).toEqual([true, true, true]);
    expect(new Set(cluster.endpoints).size).toBe(3);
    for (const endpoint of cluster.endpoints)
      expect(endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const writer = await EtcdMetadataStore.connect({ endpoints: [cluster.endpoints[0]!] });
    const reader = await EtcdMetadataStore.connect({ endpoints: [cluster.endpoints[2]!] });
    try {
      const revision = await writer.put('/cluster/hello', Buffer.from('world'));
      expect(await reader.get('/cluster/hello')).toMatchObject({ modRevision: revision });
    } finally {
      await writer.close();
      await reader.close();
    }
  });

  it('keeps the store and its watch working while members die and come back', async () => {
    const [first, second, third] = cluster.members;
    const watcher = await EtcdMetadataStore.connect({
      endpoints: [first!.clientUrl, second!.clientUrl],
    });
    // A write proposed while the cluster has no leader waits out its deadline; keep it short.
    const writer = await EtcdMetadataStore.connect({
      endpoints: [third!.clientUrl],
      requestTimeoutMs: 1_000,
    });
    try {
      const start = (await writer.getPrefix('/failover/')).revision;
      const live: bigint[] = [];
      const errors: Error[] = [];
      await watcher.watchPrefix('/failover/', start, {
        onEvents: (_events, revision) => live.push(revision),
        onError: (error) => errors.push(error),
      });
      let written = 0;
      const writeSome = async (count: number): Promise<void> => {
        for (let index = 0; index < count; index++) {
          await retrying(() => writer.put(`/failover/${written++}`, Buffer.from('x')));
        }
      };

      await writeSome(5);
      await first!.stop('SIGKILL');
      await writeSome(5);
      await first!.start();
      await second!.stop('SIGKILL');
      await writeSome(5);
      await second!.start();
      const last = await retrying(() => writer.put('/failover/last', Buffer.from('x')));

      await eventually(() => live.at(-1) === last);
      expect(errors).toEqual([]);
      const replayed: bigint[] = [];
      const replay = await writer.watchPrefix('/failover/', start, {
        onEvents: (_events, revision) => replayed.push(revision),
        onError: (error) => errors.push(error),
      });
      await eventually(() => replayed.at(-1) === last);
      await replay.cancel();
      expect(live).toEqual(replayed);
      expect((await writer.getPrefix('/failover/')).entries.length).toBe(16);
    } finally {
      await watcher.close();
      await writer.close();
    }
  });

  // Last: it takes the whole cluster down.
  it('suspends a lease once etcd could not renew it for its TTL, then reports it lost', async () => {
    const store = await EtcdMetadataStore.connect({ endpoints: cluster.endpoints });
    try {
      const lease = await store.grantLease(1_000);
      let suspendedAtMs: number | undefined;
      let lostAtMs: number | undefined;
      lease.onSuspended(() => (suspendedAtMs = Date.now()));
      lease.onLost(() => (lostAtMs = Date.now()));
      await Promise.all(cluster.members.map((member) => member.stop('SIGKILL')));
      const stoppedAtMs = Date.now();
      await eventually(() => suspendedAtMs !== undefined);
      // Suspended no later than etcd itself could have expired it: one TTL after the last renewal.
      expect(suspendedAtMs! - stoppedAtMs).toBeLessThanOrEqual(lease.ttlMs);
      expect(lease).toMatchObject({ suspended: true, alive: true });
      // With no etcd to renew it, lost after suspendedTtlsMax TTLs.
      await eventually(() => lostAtMs !== undefined);
      expect(lease.alive).toBe(false);
      expect(lostAtMs! - suspendedAtMs!).toBeGreaterThanOrEqual(
        suspendedTtlsMax * lease.ttlMs - 50,
      );
    } finally {
      await store.close();
    }
  }, 30_000);
});

/** Retries a call while its error is retriable, as a controller would (bounded). */
async function retrying<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (!isMetadataStoreError(error) || !error.retriable || attempt >= 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

async function eventually(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met within 15000 ms');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

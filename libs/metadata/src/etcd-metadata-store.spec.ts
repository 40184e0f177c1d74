// Proves the etcd backend against a real etcd started for this file (the testing entry's
// etcd-test-server.ts): it keeps the MetadataStore contract (the shared suite), elects across
// separate clients, notices a lease revoked behind its back, hands leadership over when the
// leader's client closes, and fails fast with a retriable METADATA_STORE_UNAVAILABLE when etcd
// is unreachable.
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isMetadataStoreError } from './errors';
import { EtcdMetadataStore } from './etcd-metadata-store';
import { startEtcdServer, type EtcdTestCluster } from './testing';
import { describeMetadataStoreContract } from './testing/metadata-store.contract';

let etcd: EtcdTestCluster;

beforeAll(async () => {
  etcd = await startEtcdServer();
});

afterAll(async () => {
  await etcd?.stop();
});

describeMetadataStoreContract('etcd', async () => ({
  open: () => EtcdMetadataStore.connect({ endpoints: etcd.endpoints }),
}));

describe('EtcdMetadataStore', () => {
  it('elects across clients and hands over when the leader client closes', async () => {
    const first = await EtcdMetadataStore.connect({ endpoints: etcd.endpoints });
    const second = await EtcdMetadataStore.connect({ endpoints: etcd.endpoints });
    try {
      const election = `/etcd-spec/${Date.now()}/controller/`;
      const leadership = await first.campaign(election, { candidate: 'one', leaseTtlMs: 5_000 });
      const waiting = second.campaign(election, { candidate: 'two', leaseTtlMs: 5_000 });
      expect((await second.leader(election))?.candidate).toBe('one');

      // Closing revokes the client's leases, so the standby does not wait out a TTL.
      const closedAtMs = Date.now();
      await first.close();
      const takeover = await waiting;
      expect(Date.now() - closedAtMs).toBeLessThan(2_000);
      expect(takeover.fencingToken).toBeGreaterThan(leadership.fencingToken);
      const stale = await second.transaction({
        compares: [leadership.guard],
        success: [{ kind: 'put', key: `${election}state`, value: Buffer.from('x') }],
      });
      expect(stale.succeeded).toBe(false);
      await takeover.resign();
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('reports a lease lost when someone else revokes it', async () => {
    const owner = await EtcdMetadataStore.connect({ endpoints: etcd.endpoints });
    const operator = new Etcd3({ hosts: [...etcd.endpoints] });
    try {
      const lease = await owner.grantLease(3_000);
      let lost = false;
      lease.onLost(() => (lost = true));
      const key = `/etcd-spec/${Date.now()}/ephemeral`;
      await owner.put(key, Buffer.from('x'), { lease: lease.id });
      // Revoked by another client, as an operator's `etcdctl lease revoke` would.
      await operator.leaseClient.leaseRevoke({ ID: lease.id.toString() });
      // The next keepalive (every TTL/3) learns it.
      const deadline = Date.now() + lease.ttlMs;
      while (!lost && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(lost).toBe(true);
      expect(lease.alive).toBe(false);
      expect(await owner.get(key)).toBeUndefined();
    } finally {
      await owner.close();
      operator.close();
    }
  });

  it('fails with a retriable METADATA_STORE_UNAVAILABLE when etcd is unreachable', async () => {
    const startedAtMs = Date.now();
    const error = await EtcdMetadataStore.connect({
      endpoints: ['http://127.0.0.1:1'],
      requestTimeoutMs: 500,
    }).catch((e: unknown) => e);
    expect(isMetadataStoreError(error, 'METADATA_STORE_UNAVAILABLE')).toBe(true);
    expect((error as { retriable: boolean }).retriable).toBe(true);
    expect(Date.now() - startedAtMs).toBeLessThan(5_000);
  });
});

// Proves that a transaction comparing every key it writes survives its etcd leader's death: against
// a real 3-member etcd, the store talks to one follower only, the leader is SIGKILLed, and a
// transaction sent at once (forwarded by the follower to the dead leader, where etcd drops the
// proposal and answers nothing for seconds) is sent again after an unanswered attempt and applied
// exactly once, well before the store's 5 s request timeout; and that which transactions count
// as self-guarded (isSelfGuarded) is decided by the keys they write and compare.
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdMetadataStore, isSelfGuarded } from './etcd-metadata-store';
import { startEtcdCluster, type EtcdTestCluster, type EtcdTestMember } from './testing';

let etcd: EtcdTestCluster;

beforeAll(async () => {
  etcd = await startEtcdCluster(3);
});

afterAll(async () => {
  await etcd?.stop();
});

async function roles(
  cluster: EtcdTestCluster,
): Promise<{ leader: EtcdTestMember; follower: EtcdTestMember }> {
  let leader: EtcdTestMember | undefined;
  let follower: EtcdTestMember | undefined;
  for (const member of cluster.members) {
    const client = new Etcd3({ hosts: member.clientUrl });
    try {
      const status = await client.maintenance.status();
      if (status.leader === status.header.member_id) leader = member;
      else follower = member;
    } finally {
      client.close();
    }
  }
  if (leader === undefined || follower === undefined) throw new Error('no leader and follower');
  return { leader, follower };
}

describe('a self-guarded etcd transaction', () => {
  it('is sent again when its leader dies under it, and applies once', async () => {
    const { leader, follower } = await roles(etcd);
    const store = await EtcdMetadataStore.connect({ endpoints: [follower.clientUrl] });
    try {
      const key = `/guarded/${Date.now()}`;
      await leader.stop('SIGKILL');
      const startedMs = Date.now();
      const result = await store.transaction({
        compares: [{ key, kind: 'absent' }],
        success: [{ kind: 'put', key, value: Buffer.from('once') }],
      });
      const tookMs = Date.now() - startedMs;
      expect(result.succeeded).toBe(true);
      // One unanswered attempt (2 s) and a new leader's election, not the 5 s request timeout.
      expect(tookMs).toBeLessThan(4_500);
      const written = await store.get(key);
      expect(written?.value.toString()).toBe('once');
      expect(written?.version).toBe(1n);
    } finally {
      await store.close();
    }
  }, 30_000);

  it('is one whose every written key is compared by mod revision or absence', () => {
    const put = (key: string) => ({ kind: 'put' as const, key, value: Buffer.from('v') });
    const guard = { key: '/leader', kind: 'createRevision' as const, equals: 7n };
    expect(
      isSelfGuarded({
        compares: [
          guard,
          { key: '/a', kind: 'modRevision', equals: 3n },
          { key: '/b', kind: 'absent' },
        ],
        success: [put('/a'), put('/b'), { kind: 'delete', key: '/a' }],
      }),
    ).toBe(true);
    // A key written without its own compare could be written again over a newer value.
    expect(isSelfGuarded({ compares: [guard], success: [put('/a')] })).toBe(false);
    expect(
      isSelfGuarded({
        compares: [{ key: '/a', kind: 'value', equals: Buffer.from('x') }],
        success: [put('/a')],
      }),
    ).toBe(false);
    expect(
      isSelfGuarded({
        compares: [{ key: '/a', kind: 'absent' }],
        success: [{ kind: 'deletePrefix', prefix: '/a' }],
      }),
    ).toBe(false);
    expect(
      isSelfGuarded({
        compares: [{ key: '/a', kind: 'absent' }],
        success: [put('/a')],
        failure: [put('/c')],
      }),
    ).toBe(false);
  });
});

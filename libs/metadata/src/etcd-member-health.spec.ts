// Proves that an etcd member paused (SIGSTOP) or killed while a quorum remains costs the store
// nothing it should keep: against a real 3-member etcd, each follower in turn is paused and then
// killed while the store holds a 2 s lease (the fault cluster's controller lease) and watches a
// prefix; the lease stays alive, every read answers well within a call deadline once the member
// is skipped, and a write by another client reaches the watch within seconds, whichever member
// the keepalive and watch streams happened to be on.
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EtcdMetadataStore } from './etcd-metadata-store';
import { startEtcdCluster, type EtcdTestCluster, type EtcdTestMember } from './testing';

let etcd: EtcdTestCluster;

beforeAll(async () => {
  etcd = await startEtcdCluster(3);
});

afterAll(async () => {
  for (const member of etcd?.members ?? []) {
    if (member.pid !== undefined) process.kill(member.pid, 'SIGCONT');
  }
  await etcd?.stop();
});

/** How long each fault is held: longer than the lease's TTL, so a lost lease would show. */
const faultHoldMs = 3_000;
/** A read once the member is skipped: a healthy member answers in milliseconds. */
const readMsMax = 1_000;
/** Until then reads may still go to the member: a probe interval and a probe's timeout. */
const skipAfterMs = 1_250;

async function followers(cluster: EtcdTestCluster): Promise<EtcdTestMember[]> {
  const result: EtcdTestMember[] = [];
  for (const member of cluster.members) {
    const client = new Etcd3({ hosts: member.clientUrl });
    try {
      const status = await client.maintenance.status();
      if (status.leader !== status.header.member_id) result.push(member);
    } finally {
      client.close();
    }
  }
  return result;
}

it('keeps its lease, reads and watch through a follower paused, then killed', async () => {
  const store = await EtcdMetadataStore.connect({ endpoints: etcd.endpoints });
  // Another client, itself skipping the member under the fault (a plain etcd3 client has no
  // deadline and could wait on the paused member until it resumes).
  const writer = await EtcdMetadataStore.connect({ endpoints: etcd.endpoints });
  try {
    const prefix = `/member-health/${Date.now()}/`;
    const lease = await store.grantLease(2_000);
    let lostAtMs: number | undefined;
    lease.onLost(() => (lostAtMs = Date.now()));
    const seen = new Set<string>();
    const { revision } = await store.getPrefix(prefix);
    const watch = await store.watchPrefix(prefix, revision, {
      onEvents: (events) => {
        for (const event of events) if (event.kind === 'put') seen.add(event.keyValue.key);
      },
      onError: () => undefined,
    });
    const targets = await followers(etcd);
    expect(targets).toHaveLength(2);

    const holdAndCheck = async (label: string): Promise<void> => {
      const startedAtMs = Date.now();
      let slowestReadMs = 0;
      while (Date.now() - startedAtMs < faultHoldMs) {
        const readStartedAtMs = Date.now();
        await store.get(`${prefix}absent`);
        if (readStartedAtMs - startedAtMs > skipAfterMs) {
          slowestReadMs = Math.max(slowestReadMs, Date.now() - readStartedAtMs);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const key = `${prefix}${label}`;
      await writer.put(key, Buffer.from('x'));
      await expect.poll(() => seen.has(key), { timeout: 5_000, interval: 50 }).toBe(true);
      expect({ label, lostAtMs, alive: lease.alive }).toEqual({
        label,
        lostAtMs: undefined,
        alive: true,
      });
      expect(slowestReadMs).toBeLessThan(readMsMax);
    };

    for (const member of targets) {
      process.kill(member.pid!, 'SIGSTOP');
      try {
        await holdAndCheck(`paused-${member.name}`);
      } finally {
        process.kill(member.pid!, 'SIGCONT');
      }
    }
    for (const member of targets) {
      await member.stop('SIGKILL');
      try {
        await holdAndCheck(`killed-${member.name}`);
      } finally {
        await member.start();
      }
    }
    await watch.cancel();
  } finally {
    await writer.close();
    await store.close();
  }
}, 60_000);

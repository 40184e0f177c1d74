// The contract every MetadataStore backend must keep, as one suite that each backend's spec runs
// against its own store: versioned reads and writes, ordered prefix reads, transactions (both
// branches, every compare kind, atomicity), watches (order, resumption without gaps or
// duplicates, compaction), leases, and elections, including the no-split-brain property: after a
// takeover, a transaction guarded by the old leader's guard fails.
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { isMetadataStoreError, type MetadataStoreErrorCode } from '../errors';
import type { KeyValue, Leadership, MetadataStore, Watch, WatchEvent } from '../metadata-store';

/** A store under test: the interface plus the compaction both backends offer operators. */
export interface ContractStore extends MetadataStore {
  compact(revision: bigint): Promise<void>;
}

export interface ContractBackend {
  /**
   * Opens a store on this test's data: a new client of the shared server (etcd), or the test's
   * own file (local; one open at a time, so a test closes a store before it opens the next).
   */
  open(): Promise<ContractStore>;
  /** Removes what the test left behind, after its stores are closed. */
  dispose?(): Promise<void>;
}

/** Long enough not to expire during a test: the tests end leases by revoking them. */
const leaseTtlMs = 5_000;
const waitTimeoutMs = 5_000;

export function describeMetadataStoreContract(
  backendName: string,
  createBackend: () => Promise<ContractBackend>,
): void {
  describe(`MetadataStore contract: ${backendName}`, () => {
    let backend: ContractBackend | undefined;
    const openStores: ContractStore[] = [];
    const watches: Watch[] = [];

    /** A store and a key prefix no other test uses. */
    async function setUp(): Promise<{ store: ContractStore; prefix: string }> {
      backend = await createBackend();
      const store = await open();
      return { store, prefix: `/contract/${randomUUID()}/` };
    }

    async function open(): Promise<ContractStore> {
      const store = await backend!.open();
      openStores.push(store);
      return store;
    }

    afterEach(async () => {
      for (const watch of watches.splice(0)) await watch.cancel();
      for (const store of openStores.splice(0)) await store.close();
      await backend?.dispose?.();
      backend = undefined;
    });

    async function watchAll(
      store: MetadataStore,
      prefix: string,
      afterRevision: bigint,
    ): Promise<Recorder> {
      const recorder = new Recorder();
      watches.push(await store.watchPrefix(prefix, afterRevision, recorder.handlers));
      return recorder;
    }

    it('keeps create revision, mod revision and version per key, as etcd does', async () => {
      const { store, prefix } = await setUp();
      const key = `${prefix}broker`;
      expect(await store.get(key)).toBeUndefined();

      const created = await store.put(key, Buffer.from('v1'));
      expect(await store.get(key)).toEqual(keyValue(key, 'v1', created, created, 1n));

      const updated = await store.put(key, Buffer.from('v2'));
      expect(updated).toBe(created + 1n);
      expect(await store.get(key)).toEqual(keyValue(key, 'v2', created, updated, 2n));

      const deleted = await store.delete(key);
      expect(deleted).toBe(updated + 1n);
      expect(await store.get(key)).toBeUndefined();
      // Deleting an absent key writes nothing, so the revision does not move.
      expect(await store.delete(key)).toBe(deleted);

      const recreated = await store.put(key, Buffer.from('v3'));
      expect(await store.get(key)).toEqual(keyValue(key, 'v3', recreated, recreated, 1n));
    });

    it('returns a copy of the value that the caller may change', async () => {
      const { store, prefix } = await setUp();
      const value = Buffer.from('abc');
      await store.put(`${prefix}k`, value);
      value.fill(0);
      const read = await store.get(`${prefix}k`);
      expect(read?.value.toString()).toBe('abc');
      read!.value.fill(0);
      expect((await store.get(`${prefix}k`))?.value.toString()).toBe('abc');
    });

    it('reads a prefix sorted by the keys UTF-8 bytes, at one revision', async () => {
      const { store, prefix } = await setUp();
      // U+FFFD sorts before an emoji in UTF-8 but after it in UTF-16: the byte order must win.
      const keys = [
        `${prefix}b`,
        `${prefix}a/2`,
        `${prefix}\u{1F600}`,
        `${prefix}a`,
        `${prefix}\uFFFD`,
      ];
      let lastRevision = 0n;
      for (const key of keys) lastRevision = await store.put(key, Buffer.from(key));
      await store.put(`${prefix.slice(0, -1)}-outside`, Buffer.from('x'));

      const { entries, revision } = await store.getPrefix(prefix);
      expect(entries.map((entry) => entry.key)).toEqual([
        `${prefix}a`,
        `${prefix}a/2`,
        `${prefix}b`,
        `${prefix}\uFFFD`,
        `${prefix}\u{1F600}`,
      ]);
      expect(revision).toBeGreaterThan(lastRevision);
      expect((await store.getPrefix(`${prefix}a`)).entries).toHaveLength(2);
      expect((await store.getPrefix(`${prefix}zzz`)).entries).toEqual([]);
    });

    it('runs the success branch if every compare holds, else the failure branch', async () => {
      const { store, prefix } = await setUp();
      const key = `${prefix}topic`;
      const first = await store.transaction({
        compares: [{ key, kind: 'absent' }],
        success: [{ kind: 'put', key, value: Buffer.from('created') }],
        failure: [{ kind: 'put', key: `${prefix}conflict`, value: Buffer.from('1') }],
      });
      expect(first.succeeded).toBe(true);
      expect((await store.get(key))?.value.toString()).toBe('created');

      const second = await store.transaction({
        compares: [{ key, kind: 'absent' }],
        success: [{ kind: 'put', key, value: Buffer.from('overwritten') }],
        failure: [{ kind: 'put', key: `${prefix}conflict`, value: Buffer.from('1') }],
      });
      expect(second.succeeded).toBe(false);
      expect(second.revision).toBe(first.revision + 1n);
      expect((await store.get(key))?.value.toString()).toBe('created');
      expect((await store.get(`${prefix}conflict`))?.modRevision).toBe(second.revision);

      // A failed transaction without a failure branch writes nothing and keeps the revision.
      const third = await store.transaction({
        compares: [{ key, kind: 'absent' }],
        success: [{ kind: 'put', key, value: Buffer.from('overwritten') }],
      });
      expect(third).toEqual({ succeeded: false, revision: second.revision });
    });

    it('evaluates every compare kind on present and absent keys', async () => {
      const { store, prefix } = await setUp();
      const key = `${prefix}partition`;
      const absentKey = `${prefix}absent`;
      const created = await store.put(key, Buffer.from('leader=1'));
      const modified = await store.put(key, Buffer.from('leader=2'));
      const holds = async (compare: Parameters<typeof store.transaction>[0]['compares'][number]) =>
        (await store.transaction({ compares: [compare], success: [] })).succeeded;

      expect(await holds({ key: absentKey, kind: 'absent' })).toBe(true);
      expect(await holds({ key, kind: 'absent' })).toBe(false);
      expect(await holds({ key, kind: 'createRevision', equals: created })).toBe(true);
      expect(await holds({ key, kind: 'createRevision', equals: modified })).toBe(false);
      expect(await holds({ key, kind: 'modRevision', equals: modified })).toBe(true);
      expect(await holds({ key, kind: 'modRevision', equals: created })).toBe(false);
      expect(await holds({ key, kind: 'value', equals: Buffer.from('leader=2') })).toBe(true);
      expect(await holds({ key, kind: 'value', equals: Buffer.from('leader=1') })).toBe(false);
      // An absent key has revision 0 and no value at all (not even an empty one).
      expect(await holds({ key: absentKey, kind: 'createRevision', equals: 0n })).toBe(true);
      expect(await holds({ key: absentKey, kind: 'modRevision', equals: 0n })).toBe(true);
      expect(await holds({ key: absentKey, kind: 'value', equals: Buffer.alloc(0) })).toBe(false);
      // All compares must hold.
      const mixed = await store.transaction({
        compares: [
          { key, kind: 'modRevision', equals: modified },
          { key: absentKey, kind: 'value', equals: Buffer.from('x') },
        ],
        success: [{ kind: 'delete', key }],
      });
      expect(mixed.succeeded).toBe(false);
      expect(await store.get(key)).toBeDefined();
    });

    it('applies a transaction atomically: one revision for every key it writes', async () => {
      const { store, prefix } = await setUp();
      await store.put(`${prefix}old/1`, Buffer.from('x'));
      await store.put(`${prefix}old/2`, Buffer.from('x'));
      await store.put(`${prefix}gone`, Buffer.from('x'));
      const before = (await store.getPrefix(prefix)).revision;
      const recorder = await watchAll(store, prefix, before);

      const result = await store.transaction({
        compares: [],
        success: [
          { kind: 'put', key: `${prefix}a`, value: Buffer.from('1') },
          { kind: 'put', key: `${prefix}b`, value: Buffer.from('2') },
          { kind: 'delete', key: `${prefix}gone` },
          { kind: 'deletePrefix', prefix: `${prefix}old/` },
        ],
      });
      expect(result).toEqual({ succeeded: true, revision: before + 1n });
      const { entries } = await store.getPrefix(prefix);
      expect(entries.map((entry) => [entry.key, entry.modRevision])).toEqual([
        [`${prefix}a`, result.revision],
        [`${prefix}b`, result.revision],
      ]);

      await recorder.waitForRevision(result.revision);
      expect(recorder.deliveries).toHaveLength(1);
      expect(recorder.deliveries[0]!.revision).toBe(result.revision);
      expect(recorder.deliveries[0]!.events.map(describeEvent).sort()).toEqual(
        [
          `put ${prefix}a`,
          `put ${prefix}b`,
          `delete ${prefix}gone`,
          `delete ${prefix}old/1`,
          `delete ${prefix}old/2`,
        ].sort(),
      );
    });

    it('refuses an empty key and a transaction that writes one key twice', async () => {
      const { store, prefix } = await setUp();
      const key = `${prefix}k`;
      const revision = (await store.getPrefix(prefix)).revision;
      await expectCode(store.put('', Buffer.from('1')), 'METADATA_STORE_INVALID_REQUEST');
      await expectCode(
        store.transaction({
          compares: [],
          success: [
            { kind: 'put', key, value: Buffer.from('1') },
            { kind: 'put', key, value: Buffer.from('2') },
          ],
        }),
        'METADATA_STORE_INVALID_REQUEST',
      );
      await expectCode(
        store.transaction({
          compares: [],
          success: [
            { kind: 'put', key, value: Buffer.from('1') },
            { kind: 'deletePrefix', prefix },
          ],
        }),
        'METADATA_STORE_INVALID_REQUEST',
      );
      expect(await store.get(key)).toBeUndefined();
      expect((await store.getPrefix(prefix)).revision).toBe(revision);
    });

    it('delivers puts and deletes in revision order, each revision once', async () => {
      const { store, prefix } = await setUp();
      const start = (await store.getPrefix(prefix)).revision;
      const recorder = await watchAll(store, prefix, start);
      const revisions = [
        await store.put(`${prefix}a`, Buffer.from('1')),
        await store.put(`${prefix}b`, Buffer.from('2')),
        await store.put(`${prefix}a`, Buffer.from('3')),
        await store.delete(`${prefix}b`),
      ];
      await store.put(`/elsewhere/${randomUUID()}`, Buffer.from('not watched'));

      await recorder.waitForRevision(revisions.at(-1)!);
      expect(recorder.deliveries.map((delivery) => delivery.revision)).toEqual(revisions);
      expect(recorder.deliveries.flatMap((delivery) => delivery.events.map(describeEvent))).toEqual(
        [`put ${prefix}a`, `put ${prefix}b`, `put ${prefix}a`, `delete ${prefix}b`],
      );
      const update = recorder.deliveries[2]!.events[0]!;
      expect(update.kind === 'put' && update.keyValue).toMatchObject({
        value: Buffer.from('3'),
        createRevision: revisions[0],
        modRevision: revisions[2],
        version: 2n,
      });
      expect(recorder.deliveries[3]!.events[0]).toEqual({
        kind: 'delete',
        key: `${prefix}b`,
        modRevision: revisions[3],
      });
      expect(recorder.errors).toEqual([]);
    });

    it('resumes a watch from a revision without gaps or duplicates', async () => {
      const { store, prefix } = await setUp();
      const start = (await store.getPrefix(prefix)).revision;
      const first = await watchAll(store, prefix, start);
      const written = [
        await store.put(`${prefix}1`, Buffer.from('a')),
        await store.put(`${prefix}2`, Buffer.from('b')),
        await store.delete(`${prefix}1`),
      ];
      await first.waitForRevision(written.at(-1)!);
      await watches.at(-1)!.cancel();
      const resumeAfter = first.deliveries.at(-1)!.revision;

      // Written while nobody watches.
      written.push(await store.put(`${prefix}3`, Buffer.from('c')));
      written.push(
        (
          await store.transaction({
            compares: [],
            success: [
              { kind: 'put', key: `${prefix}4`, value: Buffer.from('d') },
              { kind: 'delete', key: `${prefix}2` },
            ],
          })
        ).revision,
      );
      const second = await watchAll(store, prefix, resumeAfter);
      written.push(await store.put(`${prefix}5`, Buffer.from('e')));
      await second.waitForRevision(written.at(-1)!);

      const seen = [...first.deliveries, ...second.deliveries].map((delivery) => delivery.revision);
      expect(seen).toEqual(written);
      // A watch from the start replays the same history.
      const replay = await watchAll(store, prefix, start);
      await replay.waitForRevision(written.at(-1)!);
      expect(replay.deliveries.map((delivery) => delivery.revision)).toEqual(written);
      expect(replay.deliveries.flatMap((delivery) => delivery.events.map(describeEvent))).toEqual(
        [...first.deliveries, ...second.deliveries].flatMap((delivery) =>
          delivery.events.map(describeEvent),
        ),
      );
    });

    it('starts a watch from a future revision only at that revision', async () => {
      const { store, prefix } = await setUp();
      const now = (await store.getPrefix(prefix)).revision;
      const recorder = await watchAll(store, prefix, now + 2n);
      await store.put(`${prefix}k`, Buffer.from('1'));
      await store.put(`${prefix}k`, Buffer.from('2'));
      const third = await store.put(`${prefix}k`, Buffer.from('3'));
      await recorder.waitForRevision(third);
      expect(recorder.deliveries.map((delivery) => delivery.revision)).toEqual([third]);
    });

    it('ends a watch from a compacted revision with WATCH_COMPACTED', async () => {
      const { store, prefix } = await setUp();
      await store.put(`${prefix}k`, Buffer.from('1'));
      const middle = await store.put(`${prefix}k`, Buffer.from('2'));
      const last = await store.put(`${prefix}k`, Buffer.from('3'));
      await store.compact(last);

      const tooOld = await watchAll(store, prefix, middle - 1n);
      await tooOld.waitForError();
      expect(tooOld.errors[0]).toMatchObject({ code: 'WATCH_COMPACTED', retriable: false });
      expect(tooOld.deliveries).toEqual([]);

      // The compact revision itself is still there: a watch may start at it.
      const justInTime = await watchAll(store, prefix, last - 1n);
      await justInTime.waitForRevision(last);
      expect(justInTime.deliveries.map((delivery) => delivery.revision)).toEqual([last]);
      expect(justInTime.errors).toEqual([]);
    });

    it('deletes the keys bound to a lease when it is revoked, and tells its owner', async () => {
      const { store, prefix } = await setUp();
      const lease = await store.grantLease(leaseTtlMs);
      expect(lease.alive).toBe(true);
      expect(lease.id).toBeGreaterThan(0n);
      let lostCalls = 0;
      lease.onLost(() => (lostCalls += 1));
      const bound = await store.put(`${prefix}broker/1`, Buffer.from('up'), { lease: lease.id });
      await store.put(`${prefix}broker/2`, Buffer.from('up'), { lease: lease.id });
      await store.put(`${prefix}topic`, Buffer.from('kept'));
      expect((await store.get(`${prefix}broker/1`))?.lease).toBe(lease.id);
      const recorder = await watchAll(store, prefix, bound);

      await lease.revoke();
      expect(lease.alive).toBe(false);
      expect((await store.getPrefix(prefix)).entries.map((entry) => entry.key)).toEqual([
        `${prefix}topic`,
      ]);
      await eventually(() => lostCalls === 1);
      // broker/2 and topic were put after `bound`; then both lease keys go, in one revision.
      await recorder.waitForEvents(4);
      expect(recorder.deliveries.at(-1)!.events.map(describeEvent).sort()).toEqual([
        `delete ${prefix}broker/1`,
        `delete ${prefix}broker/2`,
      ]);
      await expectCode(
        store.put(`${prefix}broker/3`, Buffer.from('late'), { lease: lease.id }),
        'LEASE_LOST',
      );
      await lease.revoke();
      let lateListenerCalled = false;
      lease.onLost(() => (lateListenerCalled = true));
      await eventually(() => lateListenerCalled);
      expect(lostCalls).toBe(1);
    });

    it('revokes the leases of a store when it closes', async () => {
      const { store, prefix } = await setUp();
      const lease = await store.grantLease(leaseTtlMs);
      await store.put(`${prefix}ephemeral`, Buffer.from('x'), { lease: lease.id });
      await store.put(`${prefix}durable`, Buffer.from('y'));
      await store.close();
      expect(lease.alive).toBe(false);
      await expectCode(store.get(`${prefix}durable`), 'METADATA_STORE_CLOSED');

      const reopened = await open();
      expect(await reopened.get(`${prefix}ephemeral`)).toBeUndefined();
      expect((await reopened.get(`${prefix}durable`))?.value.toString()).toBe('y');
    });

    it('elects one leader; a second candidate waits and takes over after a resign', async () => {
      const { store, prefix } = await setUp();
      const election = `${prefix}controller/`;
      expect(await store.leader(election)).toBeUndefined();

      const first = await store.campaign(election, { candidate: 'controller-1', leaseTtlMs });
      expect(await store.leader(election)).toEqual({
        candidate: 'controller-1',
        fencingToken: first.fencingToken,
      });
      const secondCampaign = track(
        store.campaign(election, { candidate: 'controller-2', leaseTtlMs }),
      );
      await sleep(300);
      expect(secondCampaign.settled).toBe(false);
      expect(await guardedWrite(store, first, `${prefix}state`, 'by first')).toBe(true);

      await first.resign();
      const second = await secondCampaign.promise;
      expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
      expect(await store.leader(election)).toEqual({
        candidate: 'controller-2',
        fencingToken: second.fencingToken,
      });
      // No split brain: the old leader's guard no longer holds, the new one's does.
      expect(await guardedWrite(store, first, `${prefix}state`, 'by first, deposed')).toBe(false);
      expect(await guardedWrite(store, second, `${prefix}state`, 'by second')).toBe(true);
      expect((await store.get(`${prefix}state`))?.value.toString()).toBe('by second');
      await second.resign();
      expect(await store.leader(election)).toBeUndefined();
    });

    it('hands leadership over when the leader lease ends, and fences the old leader', async () => {
      const { store, prefix } = await setUp();
      const election = `${prefix}controller/`;
      const first = await store.campaign(election, { candidate: 'a', leaseTtlMs });
      let firstLost = false;
      first.lease.onLost(() => (firstLost = true));
      const secondCampaign = track(store.campaign(election, { candidate: 'b', leaseTtlMs }));
      // Queue the third only once the second is in line, so the order is known.
      await eventually(async () => (await store.getPrefix(election)).entries.length === 2);
      const thirdCampaign = track(store.campaign(election, { candidate: 'c', leaseTtlMs }));
      await eventually(async () => (await store.getPrefix(election)).entries.length === 3);
      await sleep(200);
      expect(secondCampaign.settled || thirdCampaign.settled).toBe(false);

      // The lease ends as if its keepalives had stopped: the key goes, the next in line leads.
      await first.lease.revoke();
      const second = await secondCampaign.promise;
      await eventually(() => firstLost);
      expect(thirdCampaign.settled).toBe(false);
      expect(await guardedWrite(store, first, `${prefix}state`, 'stale')).toBe(false);
      expect(await guardedWrite(store, second, `${prefix}state`, 'fresh')).toBe(true);

      await second.resign();
      const third = await thirdCampaign.promise;
      expect(third.fencingToken).toBeGreaterThan(second.fencingToken);
      expect((await store.leader(election))?.candidate).toBe('c');
      await third.resign();
    });

    it('stops waiting when the campaign is aborted, leaving no candidate behind', async () => {
      const { store, prefix } = await setUp();
      const election = `${prefix}controller/`;
      const leader = await store.campaign(election, { candidate: 'leader', leaseTtlMs });
      const controller = new AbortController();
      const waiting = track(
        store.campaign(election, { candidate: 'quitter', leaseTtlMs, signal: controller.signal }),
      );
      await eventually(async () => (await store.getPrefix(election)).entries.length === 2);
      controller.abort(new Error('shutting down'));
      await expectCode(waiting.promise, 'CAMPAIGN_ABORTED');
      await eventually(async () => (await store.getPrefix(election)).entries.length === 1);
      expect((await store.leader(election))?.candidate).toBe('leader');
      await leader.resign();
    });
  });
}

class Recorder {
  readonly deliveries: { revision: bigint; events: readonly WatchEvent[] }[] = [];
  readonly errors: Error[] = [];
  readonly handlers = {
    onEvents: (events: readonly WatchEvent[], revision: bigint) => {
      this.deliveries.push({ revision, events });
    },
    onError: (error: Error) => {
      this.errors.push(error);
    },
  };

  waitForRevision(revision: bigint): Promise<void> {
    return eventually(() => (this.deliveries.at(-1)?.revision ?? 0n) >= revision);
  }

  waitForEvents(count: number): Promise<void> {
    return eventually(
      () => this.deliveries.reduce((sum, delivery) => sum + delivery.events.length, 0) >= count,
    );
  }

  waitForError(): Promise<void> {
    return eventually(() => this.errors.length > 0);
  }
}

function keyValue(
  key: string,
  value: string,
  createRevision: bigint,
  modRevision: bigint,
  version: bigint,
): KeyValue {
  return { key, value: Buffer.from(value), createRevision, modRevision, version, lease: 0n };
}

function describeEvent(event: WatchEvent): string {
  return event.kind === 'put' ? `put ${event.keyValue.key}` : `delete ${event.key}`;
}

async function guardedWrite(
  store: MetadataStore,
  leadership: Leadership,
  key: string,
  value: string,
): Promise<boolean> {
  const result = await store.transaction({
    compares: [leadership.guard],
    success: [{ kind: 'put', key, value: Buffer.from(value) }],
  });
  return result.succeeded;
}

function track<T>(promise: Promise<T>): { promise: Promise<T>; readonly settled: boolean } {
  const tracked = { promise, settled: false };
  promise.then(
    () => (tracked.settled = true),
    () => (tracked.settled = true),
  );
  return tracked;
}

async function expectCode(promise: Promise<unknown>, code: MetadataStoreErrorCode): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (rejection: unknown) => rejection,
  );
  expect(isMetadataStoreError(error, code), `expected ${code}, got ${String(error)}`).toBe(true);
}

async function eventually(condition: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + waitTimeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${waitTimeoutMs} ms`);
    await sleep(10);
  }
}

function sleep(durationMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, durationMs));
}

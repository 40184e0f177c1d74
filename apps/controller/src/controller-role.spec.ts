// Proves that an active controller whose lease is suspended (renewals unanswered past its TTL, as
// while etcd elects a leader) serves nothing but keeps its leadership: requireActive answers
// NOT_CONTROLLER without a hint, and once the lease resumes with the election key still holding
// its fencing token the same leadership serves again (a new ActiveController on the same view,
// whose writes commit), without a new campaign. A lease that resumes after its key was deleted,
// or that is lost while suspended, ends the leadership and the controller campaigns again. Runs a
// ControllerRole on a real local metadata store whose leases this test suspends and resumes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createLogger } from '@spool/common';
import {
  LocalMetadataStore,
  MetadataKeys,
  type Leadership,
  type Lease,
  type MetadataStore,
} from '@spool/metadata';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ControllerMetrics } from './controller-metrics';
import { ControllerRole, ControllerRoleState } from './controller-role';

const logger = createLogger({ service: 'controller-role-test', level: 'silent' });
const keys = new MetadataKeys('test');
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A store lease, with a suspension this test controls (the local store's never suspend). */
class SuspendableLease implements Lease {
  suspended = false;
  private readonly suspendedListeners: Array<() => void> = [];
  private readonly resumedListeners: Array<(suspendedMs: number) => void> = [];

  constructor(private readonly inner: Lease) {}

  get id(): bigint {
    return this.inner.id;
  }
  get ttlMs(): number {
    return this.inner.ttlMs;
  }
  get alive(): boolean {
    return this.inner.alive;
  }
  onLost(listener: () => void): void {
    this.inner.onLost(listener);
  }
  revoke(): Promise<void> {
    return this.inner.revoke();
  }
  onSuspended(listener: () => void): void {
    this.suspendedListeners.push(listener);
  }
  onResumed(listener: (suspendedMs: number) => void): void {
    this.resumedListeners.push(listener);
  }
  suspend(): void {
    this.suspended = true;
    for (const listener of this.suspendedListeners) listener();
  }
  resume(): void {
    this.suspended = false;
    for (const listener of this.resumedListeners) listener(100);
  }
}

async function startRole(): Promise<{
  store: LocalMetadataStore;
  role: ControllerRole;
  leases: SuspendableLease[];
}> {
  const directory = mkdtempSync(path.join(tmpdir(), 'spool-controller-role-'));
  const store = await LocalMetadataStore.open({ path: path.join(directory, 'metadata.journal') });
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  cleanups.push(() => store.close());
  const leases: SuspendableLease[] = [];
  const suspendable = new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'campaign') {
        return async (...args: Parameters<MetadataStore['campaign']>) => {
          const leadership = await target.campaign(...args);
          const lease = new SuspendableLease(leadership.lease);
          leases.push(lease);
          return {
            fencingToken: leadership.fencingToken,
            guard: leadership.guard,
            lease,
            resign: () => leadership.resign(),
          } satisfies Leadership;
        };
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const role = new ControllerRole(
    suspendable,
    keys,
    'controller-0:9093',
    {
      leaseTtlMs: 2_000,
      brokerSessionTimeoutMs: 9_000,
      defaultReplicationFactor: 1,
      defaultPartitionCount: 1,
      coordinatorSessionTimeoutMs: 10_000,
      offsetsTopicPartitionCount: 1,
      maintenanceIntervalMs: 60_000,
      autoLeaderRebalanceEnable: false,
      leaderImbalanceCheckIntervalMs: 300_000,
      autoBalance: false,
      autoBalanceIntervalMs: 60_000,
      autoBalanceMovesMax: 1,
      autoBalanceBytesMax: 1,
      autoBalanceTolerancePercent: 10,
    },
    logger,
    new ControllerMetrics(new Registry()),
  );
  const running = role.run();
  cleanups.push(async () => {
    await role.stop();
    await running;
  });
  await vi.waitFor(() => expect(role.state).toBe(ControllerRoleState.Active), { timeout: 5_000 });
  return { store, role, leases };
}

async function notControllerOf(role: ControllerRole): Promise<unknown> {
  return role.requireActive().then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('ControllerRole with a suspended lease', () => {
  it('serves nothing while suspended and serves again on the same leadership once resumed', async () => {
    const { role, leases } = await startRole();
    const before = await role.requireActive();
    leases[0]!.suspend();
    expect(role.state).toBe(ControllerRoleState.Suspended);
    const refused = await notControllerOf(role);
    expect(refused).toMatchObject({ code: 'NOT_CONTROLLER', details: {} });
    expect((refused as Error).message).toMatch(/lost touch with the metadata store/);
    // The suspended controller's queue is closed: a command sent to it is refused.
    await expect(before.controller.queue.run(() => Promise.resolve())).rejects.toMatchObject({
      code: 'NOT_CONTROLLER',
    });

    leases[0]!.resume();
    await vi.waitFor(() => expect(role.state).toBe(ControllerRoleState.Active), {
      timeout: 5_000,
    });
    const after = await role.requireActive();
    expect(after.controller).not.toBe(before.controller);
    expect(after.state).toBe(before.state);
    // Still the same leadership: no new campaign, and its guarded writes commit.
    expect(leases).toHaveLength(1);
    await after.controller.context.writer.commit(
      [],
      [{ kind: 'put', key: `${keys.root}/probe`, value: Buffer.from('x') }],
    );
  });

  it('steps down when the lease resumes but its election key is gone', async () => {
    const { store, role, leases } = await startRole();
    leases[0]!.suspend();
    const { entries } = await store.getPrefix(keys.controller());
    expect(entries).toHaveLength(1);
    await store.delete(entries[0]!.key);
    leases[0]!.resume();
    // Deposed: it campaigns again with a new lease and wins (no other candidate).
    await vi.waitFor(() => expect(leases).toHaveLength(2), { timeout: 10_000 });
    await vi.waitFor(() => expect(role.state).toBe(ControllerRoleState.Active), {
      timeout: 10_000,
    });
  });

  it('steps down when the lease is lost while suspended', async () => {
    const { role, leases } = await startRole();
    leases[0]!.suspend();
    await leases[0]!.revoke();
    await vi.waitFor(() => expect(leases).toHaveLength(2), { timeout: 10_000 });
    await vi.waitFor(() => expect(role.state).toBe(ControllerRoleState.Active), {
      timeout: 10_000,
    });
    expect(leases[1]!.suspended).toBe(false);
  });
});

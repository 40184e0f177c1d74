/**
 * Whether this controller leads, and the loop that makes it so. Several controllers may run;
 * each campaigns in the metadata store's election and the winner becomes active: it reads the
 * whole cluster prefix, watches it from that revision, and serves. The others stand by and answer
 * NOT_CONTROLLER with the active one's address. An active controller steps down when its lease
 * is lost or a guarded write proves another controller has taken over, then campaigns again.
 *
 * A lease whose renewals go unanswered past its TTL is suspended (etcd-lease.ts, step 5): etcd
 * may have expired it, or may still hold it while it elects a leader of its own. The active
 * controller then suspends: it serves nothing (NOT_CONTROLLER, its metadata streams ended, its
 * command queue closed) but keeps its election key, its view and the view's watch. If the lease
 * resumes (etcd renewed it, so it never expired and no other controller can have won: a
 * standby wins only once this key is deleted) and the key still holds its fencing token, it
 * serves again with a new ActiveController on the same view, once the old one's last command
 * has ended; a lost lease ends the leadership as before. Fencing does not rest on this: every
 * write is guarded by the key's create revision, so a controller that believed itself active a
 * moment too long could write nothing. Suspending rather than resigning spares the cluster a
 * failover (waiting out the lease, a new campaign, reading the whole prefix) at every etcd
 * leader election.
 *
 *   Starting → Standby → Active ⇄ Suspended → Standby → … → Stopped
 */
import { randomUUID } from 'node:crypto';
import { SpoolError, type Logger } from '@spool/common';
import type { Leadership, MetadataKeys, MetadataStore, Watch } from '@spool/metadata';
import { ActiveController, type ActiveControllerSettings } from './active-controller';
import type { ControllerAnnouncer } from './controller-announcement';
import { ClusterState } from './cluster-state';
import type { ControllerMetrics } from './controller-metrics';
import { encodeRecord } from './metadata-records';
import { MetadataWriter } from './metadata-writer';

export enum ControllerRoleState {
  Starting = 'starting',
  Standby = 'standby',
  Active = 'active',
  /** Active, but its lease is suspended: serving nothing until it resumes or is lost. */
  Suspended = 'suspended',
  Stopped = 'stopped',
}

/** How long to wait before campaigning again after a failure. */
const campaignRetryDelayMs = 1_000;

export class ControllerRole {
  private roleState = ControllerRoleState.Starting;
  private active:
    | { controller: ActiveController; state: ClusterState; leadership: Leadership; watch: Watch }
    | undefined;
  /** What the leadership in progress serves with; kept while suspended. */
  private serving:
    | { state: ClusterState; writer: MetadataWriter; controller: ActiveController; watch: Watch }
    | undefined;
  private readonly abort = new AbortController();
  private stepDown: (() => void) | undefined;
  private readonly listeners = new Set<
    (active: ActiveController | undefined, state: ClusterState | undefined) => void
  >();

  constructor(
    private readonly store: MetadataStore,
    private readonly keys: MetadataKeys,
    private readonly advertisedAddress: string,
    private readonly settings: ActiveControllerSettings & {
      readonly leaseTtlMs: number;
      /** TEST HOOK: see MetadataWriterTestHooks; 0 (off) unless a test sets it. */
      readonly testPauseAfterMetadataChunk?: number;
    },
    private readonly logger: Logger,
    private readonly metrics: ControllerMetrics,
    /** Whether a broker registration's metadata stream is open here (takeover fencing). */
    private readonly isBrokerWatching?: (brokerId: number, brokerEpoch: bigint) => boolean,
    /** Announces a new leadership to the brokers it inherits (controller-announcement.ts). */
    private readonly announcer?: ControllerAnnouncer,
  ) {}

  get state(): ControllerRoleState {
    return this.roleState;
  }

  private transitionTo(
    allowedFrom: readonly ControllerRoleState[],
    next: ControllerRoleState,
  ): void {
    if (!allowedFrom.includes(this.roleState)) {
      throw new Error(`controller role cannot go from ${this.roleState} to ${next}`);
    }
    this.logger.info({ from: this.roleState, to: next }, `controller role: ${next}`);
    this.roleState = next;
  }

  /** Called with the active controller and its view on every change of role. */
  onChange(
    listener: (active: ActiveController | undefined, state: ClusterState | undefined) => void,
  ): void {
    this.listeners.add(listener);
  }

  /** The active controller, or NOT_CONTROLLER naming the one that is. */
  async requireActive(): Promise<{ controller: ActiveController; state: ClusterState }> {
    if (this.active !== undefined && this.roleState === ControllerRoleState.Active)
      return this.active;
    if (this.roleState === ControllerRoleState.Suspended) {
      // No hint: the election still names this controller, and a caller sent back here at once
      // would spend its attempts without a pause.
      throw new SpoolError(
        'NOT_CONTROLLER',
        'this controller lost touch with the metadata store and serves nothing until it is back; retry shortly',
      );
    }
    const leader = await this.store.leader(this.keys.controller()).catch(() => undefined);
    throw new SpoolError(
      'NOT_CONTROLLER',
      leader === undefined
        ? 'this controller is a standby and no controller is active yet; retry shortly'
        : `this controller is a standby; the active controller is ${leader.candidate}`,
      leader === undefined ? {} : { details: { activeController: leader.candidate } },
    );
  }

  /** The active controller's address, as the election records it. */
  async activeAddress(): Promise<string> {
    if (this.roleState === ControllerRoleState.Active) return this.advertisedAddress;
    return (
      (await this.store.leader(this.keys.controller()).catch(() => undefined))?.candidate ?? ''
    );
  }

  /** Campaigns until stopped. Resolves when stopped. */
  async run(): Promise<void> {
    this.transitionTo([ControllerRoleState.Starting], ControllerRoleState.Standby);
    while (!this.abort.signal.aborted) {
      try {
        const leadership = await this.store.campaign(this.keys.controller(), {
          candidate: this.advertisedAddress,
          leaseTtlMs: this.settings.leaseTtlMs,
          signal: this.abort.signal,
        });
        if (this.abort.signal.aborted) {
          await leadership.resign().catch(() => {});
          break;
        }
        await this.lead(leadership);
      } catch (error) {
        if (this.abort.signal.aborted) break;
        this.logger.warn({ err: error }, 'controller campaign failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, campaignRetryDelayMs));
      }
    }
  }

  /** Serves as the active controller until the leadership is lost, then returns. */
  private async lead(leadership: Leadership): Promise<void> {
    const deposed = new Promise<void>((resolve) => {
      this.stepDown = resolve;
      leadership.lease.onLost(() => {
        this.logger.warn('controller lease lost');
        resolve();
      });
    });
    leadership.lease.onSuspended(() => this.suspend());
    leadership.lease.onResumed((suspendedMs) => {
      this.resume(leadership, suspendedMs).catch((error: unknown) => {
        this.logger.warn({ err: error }, 'controller could not resume; stepping down');
        this.stepDown?.();
      });
    });
    const state = new ClusterState(this.keys, (key, error) =>
      this.logger.error({ key, err: error }, 'ignoring a metadata record that does not decode'),
    );
    const snapshot = await this.store.getPrefix(this.keys.root);
    state.load(snapshot.entries, snapshot.revision);
    const watch = await this.store.watchPrefix(this.keys.root, snapshot.revision, {
      onEvents: (events, revision) => state.apply(events, revision),
      onError: (error) => {
        this.logger.error({ err: error }, 'metadata watch failed; stepping down to reload');
        this.stepDown?.();
      },
    });
    const pauseAfterChunk = this.settings.testPauseAfterMetadataChunk ?? 0;
    const writer = new MetadataWriter(
      this.store,
      this.keys,
      state,
      leadership,
      () => this.stepDown?.(),
      pauseAfterChunk > 0 ? { pauseAfterChunk, logger: this.logger } : undefined,
    );
    const controller = this.newActiveController(state, writer, leadership);
    this.serving = { state, writer, controller, watch };
    try {
      if (state.clusterId === '') {
        await writer.commit(
          [{ key: this.keys.cluster(), kind: 'absent' }],
          [
            {
              kind: 'put',
              key: this.keys.cluster(),
              value: encodeRecord({ clusterId: randomUUID() }),
            },
          ],
        );
      }
      this.active = { controller, state, leadership, watch };
      this.transitionTo([ControllerRoleState.Standby], ControllerRoleState.Active);
      this.logger.info(
        {
          fencingToken: leadership.fencingToken,
          metadataVersion: state.revision,
          brokers: state.brokers.size,
        },
        'this controller is now active',
      );
      controller.start();
      this.notify();
      // Suspended before this controller could listen: act on it now.
      if (leadership.lease.suspended) this.suspend();
      await Promise.race([
        deposed,
        new Promise((resolve) => this.abort.signal.addEventListener('abort', resolve)),
      ]);
    } finally {
      // A commit waiting for this view to apply its write would wait forever once the watch
      // is cancelled: it answers NOT_CONTROLLER now, and the caller retries on the next one.
      state.abandon(
        new SpoolError(
          'NOT_CONTROLLER',
          'this controller stopped leading before its write was applied; retry with the new one',
        ),
      );
      this.serving.controller.stop();
      this.serving = undefined;
      this.active = undefined;
      await watch.cancel().catch(() => {});
      if (
        this.roleState === ControllerRoleState.Active ||
        this.roleState === ControllerRoleState.Suspended
      ) {
        this.transitionTo(
          [ControllerRoleState.Active, ControllerRoleState.Suspended],
          ControllerRoleState.Standby,
        );
      }
      this.notify();
      await leadership.resign().catch(() => {});
    }
  }

  private newActiveController(
    state: ClusterState,
    writer: MetadataWriter,
    leadership: Leadership,
  ): ActiveController {
    const announcer = this.announcer;
    return new ActiveController(
      state,
      writer,
      this.logger,
      this.metrics,
      this.settings,
      this.isBrokerWatching,
      announcer === undefined
        ? undefined
        : (brokers) =>
            announcer.announce(this.advertisedAddress, leadership.fencingToken, brokers),
    );
  }

  /** The lease is suspended: serve nothing, keep the key, the view and its watch. */
  private suspend(): void {
    if (this.roleState !== ControllerRoleState.Active || this.serving === undefined) return;
    this.transitionTo([ControllerRoleState.Active], ControllerRoleState.Suspended);
    this.logger.warn(
      'controller lease unconfirmed past its TTL (etcd unreachable or electing a leader): ' +
        'serving nothing until etcd renews it or it is lost',
    );
    this.serving.controller.stop();
    this.active = undefined;
    this.notify();
  }

  /**
   * The lease resumed: etcd held it all along. Serves again once the election key is read back
   * with this leadership's fencing token and the suspended controller's last command has ended
   * (its queue is closed, but a command it was running may still be writing).
   */
  private async resume(leadership: Leadership, suspendedMs: number): Promise<void> {
    if (this.roleState !== ControllerRoleState.Suspended || this.serving === undefined) return;
    const suspended = this.serving;
    await suspended.controller.queue.drained();
    const key = await this.store.get(leadership.guard.key);
    if (key?.createRevision !== leadership.fencingToken) {
      this.logger.warn('controller lease resumed without its election key; stepping down');
      this.stepDown?.();
      return;
    }
    // Suspended again, lost, or stopped meanwhile: nothing to resume.
    if (
      this.roleState !== ControllerRoleState.Suspended ||
      this.serving !== suspended ||
      leadership.lease.suspended ||
      !leadership.lease.alive
    ) {
      return;
    }
    const controller = this.newActiveController(suspended.state, suspended.writer, leadership);
    this.serving = { ...suspended, controller };
    this.active = { controller, state: suspended.state, leadership, watch: suspended.watch };
    this.transitionTo([ControllerRoleState.Suspended], ControllerRoleState.Active);
    this.logger.info(
      {
        suspendedMs,
        fencingToken: leadership.fencingToken,
        metadataVersion: suspended.state.revision,
      },
      'controller lease renewed by etcd: this controller is active again',
    );
    controller.start();
    this.notify();
  }

  private notify(): void {
    for (const listener of this.listeners) listener(this.active?.controller, this.active?.state);
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.stepDown?.();
    if (this.roleState !== ControllerRoleState.Stopped) {
      this.transitionTo(
        [
          ControllerRoleState.Standby,
          ControllerRoleState.Active,
          ControllerRoleState.Suspended,
          ControllerRoleState.Starting,
        ],
        ControllerRoleState.Stopped,
      );
    }
  }
}

/**
 * Whether this controller leads, and the loop that makes it so. Several controllers may run;
 * each campaigns in the metadata store's election and the winner becomes active: it reads the
 * whole cluster prefix, watches it from that revision, and serves. The others stand by and answer
 * NOT_CONTROLLER with the active one's address. An active controller steps down when its lease
 * is lost or a guarded write proves another controller has taken over, then campaigns again.
 *
 *   Starting → Standby → Active → Standby → … → Stopped
 */
import { randomUUID } from 'node:crypto';
import { SpoolError, type Logger } from '@spool/common';
import type { Leadership, MetadataKeys, MetadataStore, Watch } from '@spool/metadata';
import { ActiveController, type ActiveControllerSettings } from './active-controller';
import { ClusterState } from './cluster-state';
import type { ControllerMetrics } from './controller-metrics';
import { encodeRecord } from './metadata-records';
import { MetadataWriter } from './metadata-writer';

export enum ControllerRoleState {
  Starting = 'starting',
  Standby = 'standby',
  Active = 'active',
  Stopped = 'stopped',
}

/** How long to wait before campaigning again after a failure. */
const campaignRetryDelayMs = 1_000;

export class ControllerRole {
  private roleState = ControllerRoleState.Starting;
  private active:
    | { controller: ActiveController; state: ClusterState; leadership: Leadership; watch: Watch }
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
    const controller = new ActiveController(
      state,
      writer,
      this.logger,
      this.metrics,
      this.settings,
      this.isBrokerWatching,
    );
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
      controller.stop();
      this.active = undefined;
      await watch.cancel().catch(() => {});
      if (this.roleState === ControllerRoleState.Active) {
        this.transitionTo([ControllerRoleState.Active], ControllerRoleState.Standby);
      }
      this.notify();
      await leadership.resign().catch(() => {});
    }
  }

  private notify(): void {
    for (const listener of this.listeners) listener(this.active?.controller, this.active?.state);
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.stepDown?.();
    if (this.roleState !== ControllerRoleState.Stopped) {
      this.transitionTo(
        [ControllerRoleState.Standby, ControllerRoleState.Active, ControllerRoleState.Starting],
        ControllerRoleState.Stopped,
      );
    }
  }
}

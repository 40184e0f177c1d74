/**
 * Brokers' lives as the active controller sees them (Kafka's KRaft model): a storage node
 * registers with a new incarnation id per process start and receives a broker epoch (larger than
 * any epoch this id had before; see BrokerRecord); it then heartbeats. A broker silent for
 * `broker.session.timeout.ms` is fenced: it leaves every ISR it can leave, loses its leaderships,
 * and then is marked fenced (see fence() for why in that order). A broker shutting down
 * asks first (controlled shutdown) so its leaderships move while it still serves; the record
 * then says so (inControlledShutdown), and a new incarnation of that id registers at once.
 *
 * Sessions live in memory: a controller that takes over inherits every unfenced broker's session
 * as if it had just heartbeated (so a new incarnation of the id is refused for a session timeout,
 * as before), except brokers whose record says they were shutting down: those are gone or going,
 * and their id is free for the next process at once. The new controller announces itself to
 * each inherited broker (controller-announcement.ts): one that answers is alive and moves its
 * stream here at once (reachedAtTakeover), one whose address refuses the connection is gone and
 * is fenced at once. One that has neither answered, heartbeated nor opened its metadata stream
 * within `brokerTakeoverGraceMs` is fenced then, not a whole session later
 * (unreachedSinceTakeover): the broker a failover left silent is most often the very process whose
 * fault cost the failover. Safe for the reasons fenceDisconnected() gives.
 *
 * A broker whose data directory failed (a full disk) says so in its heartbeats
 * (log_dir_offline, Kafka's OfflineLogDirs; it sends one at once): it stays registered and
 * heartbeating, but it leads and joins nothing (isLive is false) and leaves every ISR it can
 * leave, its leaderships moving to other ISR members, as fence() does, until a heartbeat says
 * the directory is back. That state lives in the session too: a new controller learns it from
 * the broker's next heartbeat.
 */
import { assert, SpoolError } from '@spool/common';
import type { ControllerContext } from './controller-context';
import { encodeRecord, type BrokerRecord, type EndpointRecord } from './metadata-records';
import type { IndependentWrite } from './metadata-writer';
import { removeBroker, type PartitionChange } from './partition-elections';
import { effectiveTopicConfig } from './topic-configs';

/**
 * How long after taking over a controller waits for an inherited broker to answer its
 * announcement, heartbeat or watch (capped by the session timeout). A live broker answers the
 * announcement within its 1 s deadline (announcementDeadlineMs) and is reached then; without
 * it (an announcement lost, a broker that does not know BeginControllerEpoch yet during a
 * rolling upgrade) its metadata stream still reconnects within a quarter second of the failover
 * when the old controller's connections closed, but only after about 2.5 s of unanswered pings
 * when it was paused: such a broker may be fenced before it arrives, which costs a leadership
 * move and never a record (fenceDisconnected).
 */
export const brokerTakeoverGraceMs = 1_500;

interface BrokerSession {
  lastHeartbeatMs: number;
  /** Inherited at takeover, and the broker has not heartbeated this controller since. */
  inherited?: boolean;
  /** Set by controlled shutdown: the broker still serves, but leads and joins nothing new. */
  shuttingDown: boolean;
  /** The broker's data directory is offline: it leads and joins nothing until it is back. */
  logDirOffline?: boolean;
}

export class BrokerLifecycle {
  private readonly sessions = new Map<number, BrokerSession>();
  private readonly takeoverAtMs: number;

  constructor(
    private readonly context: ControllerContext,
    private readonly clock: () => number = Date.now,
  ) {
    this.takeoverAtMs = clock();
    for (const broker of context.state.brokers.values()) {
      if (!broker.record.fenced)
        this.sessions.set(broker.record.brokerId, {
          lastHeartbeatMs: clock(),
          inherited: true,
          shuttingDown: broker.record.inControlledShutdown === true,
        });
    }
  }

  /** Whether the broker's heartbeats last said its data directory is offline. */
  isLogDirOffline(brokerId: number): boolean {
    return this.sessions.get(brokerId)?.logDirOffline === true;
  }

  isLive(brokerId: number): boolean {
    const broker = this.context.state.brokers.get(brokerId);
    const session = this.sessions.get(brokerId);
    return (
      broker !== undefined &&
      !broker.record.fenced &&
      session !== undefined &&
      !session.shuttingDown &&
      session.logDirOffline !== true &&
      this.clock() - session.lastHeartbeatMs <= this.context.settings.brokerSessionTimeoutMs
    );
  }

  async register(request: {
    brokerId: number;
    rack: string;
    endpoints: readonly EndpointRecord[];
    incarnationId: string;
  }): Promise<bigint> {
    const { brokerId } = request;
    if (!Number.isInteger(brokerId) || brokerId < 0) {
      throw new SpoolError(
        'INVALID_REQUEST',
        `broker_id is ${brokerId}; it must be a non-negative integer`,
      );
    }
    if (request.incarnationId === '') {
      throw new SpoolError('INVALID_REQUEST', 'incarnation_id is empty');
    }
    for (const endpoint of request.endpoints) {
      if (
        endpoint.host === '' ||
        !Number.isInteger(endpoint.port) ||
        endpoint.port < 1 ||
        endpoint.port > 65535
      ) {
        throw new SpoolError(
          'INVALID_REQUEST',
          `endpoint "${endpoint.name}" has no valid host and port`,
        );
      }
    }
    const existing = this.context.state.brokers.get(brokerId);
    const session = this.sessions.get(brokerId);
    if (
      existing !== undefined &&
      !existing.record.fenced &&
      existing.record.incarnationId !== request.incarnationId &&
      session !== undefined &&
      !session.shuttingDown &&
      this.clock() - session.lastHeartbeatMs <= this.context.settings.brokerSessionTimeoutMs
    ) {
      const silentMs = this.clock() - session.lastHeartbeatMs;
      throw new SpoolError(
        'DUPLICATE_BROKER_REGISTRATION',
        `broker id ${brokerId} is registered by incarnation ${existing.record.incarnationId}, ` +
          `whose session has not expired (silent for ${silentMs} ms of ` +
          `${this.context.settings.brokerSessionTimeoutMs} ms); the id is free once that ` +
          'process shuts down or its session expires; a second node needs another broker.id',
      );
    }
    const keys = this.context.writer.metadataKeys;
    const brokerEpoch = this.context.state.revision + 1n;
    const record: BrokerRecord = {
      brokerId,
      rack: request.rack,
      endpoints: request.endpoints,
      incarnationId: request.incarnationId,
      brokerEpoch: brokerEpoch.toString(),
      fenced: false,
      // A decommissioned broker that restarts stays decommissioned, and keeps its dynamic configs.
      ...(existing?.record.decommissioned === true ? { decommissioned: true } : {}),
      ...(existing?.record.dynamicConfigs === undefined
        ? {}
        : { dynamicConfigs: existing.record.dynamicConfigs }),
    };
    await this.context.writer.commit(
      [this.context.writer.unchangedSince(keys.broker(brokerId), existing?.modRevision)],
      [{ kind: 'put', key: keys.broker(brokerId), value: encodeRecord(record) }],
    );
    this.sessions.set(brokerId, { lastHeartbeatMs: this.clock(), shuttingDown: false });
    this.context.logger.info({ brokerId, brokerEpoch, rack: request.rack }, 'broker registered');
    return brokerEpoch;
  }

  /**
   * Answers whether the broker is fenced (it must register again), and whether the state of its
   * data directory it reports differs from what this controller holds: then the caller runs
   * setLogDirOffline() on the queue.
   */
  heartbeat(
    brokerId: number,
    brokerEpoch: bigint,
    logDirOffline = false,
  ): { fenced: boolean; logDirChanged: boolean } {
    const broker = this.context.state.brokers.get(brokerId);
    if (broker === undefined || broker.brokerEpoch !== brokerEpoch || broker.record.fenced)
      return { fenced: true, logDirChanged: false };
    const session = this.sessions.get(brokerId);
    if (session === undefined)
      this.sessions.set(brokerId, { lastHeartbeatMs: this.clock(), shuttingDown: false });
    else {
      session.lastHeartbeatMs = this.clock();
      session.inherited = false;
    }
    const held = this.sessions.get(brokerId)!.logDirOffline === true;
    return { fenced: false, logDirChanged: held !== logDirOffline };
  }

  /**
   * The broker's data directory went offline, or came back. Offline: it is no longer live (it
   * is elected for nothing and joins no ISR), and its leaderships and ISR places move as in
   * fence(), without fencing it: it still heartbeats and follows metadata, and its replicas
   * rejoin as followers once the directory is back. Online: it is live again; the maintenance
   * round elects it for partitions that had no other leader, and each leader takes it back into
   * its ISR once it has caught up. Safe for the same reasons as fence(): every new leader comes
   * from the ISR, and the broker's own appends were already failing.
   */
  async setLogDirOffline(brokerId: number, brokerEpoch: bigint, offline: boolean): Promise<void> {
    this.checkEpoch(brokerId, brokerEpoch);
    const session = this.sessions.get(brokerId);
    if (session === undefined || (session.logDirOffline === true) === offline) return;
    if (!offline) {
      session.logDirOffline = false;
      this.context.logger.info({ brokerId }, 'broker data directory online again');
      return;
    }
    const startedMs = this.clock();
    const moved = this.partitionChanges(brokerId, () => true);
    await this.context.writer.commitIndependent(moved.map(toIndependentWrite));
    // Marked once the moves are written: a write that failed leaves the mark unset, and the
    // broker's next heartbeat (each says offline) tries again.
    session.logDirOffline = true;
    this.countElections(moved.map((change) => change.change));
    // electionMs as in fence(): the fault suite's breakdown splits detection from election by it.
    this.context.logger.warn(
      { brokerId, partitionsChanged: moved.length, electionMs: this.clock() - startedMs },
      'broker data directory offline: its leaderships and ISR places moved',
    );
  }

  checkEpoch(brokerId: number, brokerEpoch: bigint): void {
    const broker = this.context.state.brokers.get(brokerId);
    if (broker === undefined || broker.brokerEpoch !== brokerEpoch || broker.record.fenced) {
      throw new SpoolError(
        'STALE_BROKER_EPOCH',
        `broker ${brokerId} with epoch ${brokerEpoch} is not registered as such; register again`,
      );
    }
  }

  /** Brokers whose session ran out and that are not fenced yet. */
  expiredBrokers(): number[] {
    const expired: number[] = [];
    for (const broker of this.context.state.brokers.values()) {
      if (broker.record.fenced) continue;
      const session = this.sessions.get(broker.record.brokerId);
      if (
        session === undefined ||
        this.clock() - session.lastHeartbeatMs > this.context.settings.brokerSessionTimeoutMs
      ) {
        expired.push(broker.record.brokerId);
      }
    }
    return expired;
  }

  /**
   * The brokers whose sessions this controller inherited and that have not reached it yet, with
   * their gRPC address (the registration's `grpc` endpoint), to announce the takeover to.
   */
  inheritedBrokers(): { brokerId: number; brokerEpoch: bigint; address: string }[] {
    const inherited: { brokerId: number; brokerEpoch: bigint; address: string }[] = [];
    for (const broker of this.context.state.brokers.values()) {
      const session = this.sessions.get(broker.record.brokerId);
      const endpoint = broker.record.endpoints.find((candidate) => candidate.name === 'grpc');
      if (
        broker.record.fenced ||
        session?.inherited !== true ||
        session.shuttingDown ||
        endpoint === undefined
      ) {
        continue;
      }
      inherited.push({
        brokerId: broker.record.brokerId,
        brokerEpoch: broker.brokerEpoch,
        address: `${endpoint.host}:${endpoint.port}`,
      });
    }
    return inherited;
  }

  /** Whether an inherited broker has neither heartbeated this controller nor watched it yet. */
  unreachedSinceTakeoverNow(
    brokerId: number,
    isWatching: (brokerId: number, brokerEpoch: bigint) => boolean,
  ): boolean {
    const broker = this.context.state.brokers.get(brokerId);
    const session = this.sessions.get(brokerId);
    return (
      broker !== undefined &&
      !broker.record.fenced &&
      session?.inherited === true &&
      !session.shuttingDown &&
      !isWatching(brokerId, broker.brokerEpoch)
    );
  }

  /**
   * The broker answered this controller's takeover announcement with the registration it holds:
   * it is alive, as if it had heartbeated, and no longer waits on the takeover grace.
   */
  reachedAtTakeover(brokerId: number, brokerEpoch: bigint): void {
    const broker = this.context.state.brokers.get(brokerId);
    const session = this.sessions.get(brokerId);
    if (broker === undefined || session === undefined || broker.brokerEpoch !== brokerEpoch) return;
    session.lastHeartbeatMs = this.clock();
    session.inherited = false;
  }

  /**
   * Brokers whose session this controller inherited at takeover and that, `brokerTakeoverGraceMs`
   * later, have neither heartbeated it nor watched its metadata (`isWatching`, the publisher's
   * view of open streams): the caller fences them. Never one in controlled shutdown, as in
   * fenceDisconnected().
   */
  unreachedSinceTakeover(isWatching: (brokerId: number, brokerEpoch: bigint) => boolean): number[] {
    const graceMs = Math.min(brokerTakeoverGraceMs, this.context.settings.brokerSessionTimeoutMs);
    if (this.clock() - this.takeoverAtMs <= graceMs) return [];
    return [...this.context.state.brokers.keys()].filter((brokerId) =>
      this.unreachedSinceTakeoverNow(brokerId, isWatching),
    );
  }

  /**
   * The broker's own WatchMetadata stream closed and it has not watched again: the connection of
   * its current registration is gone (kill -9, a crash, a lost host). Fences it now instead of
   * after broker.session.timeout.ms, when the stream belonged to the current registration.
   *
   * Why this is safe: fencing is the controller's unilateral decision at any time (Kafka fences
   * on a missed session the same way, and a long GC pause looks like a death too). Safety never
   * rests on the broker being dead: every new leader comes from the ISR with a bumped leader
   * epoch, so a fenced broker that still runs is refused by followers and clients
   * (FENCED_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER), cannot change the ISR of what it led (its
   * AlterPartition carries a stale broker epoch), learns of the fence on its next heartbeat and
   * registers again. A false positive (a live broker whose stream broke) therefore costs one
   * leadership move, never a record; the caller waits a grace period for the stream to come back
   * so a mere reconnect is not one. A stream of an older registration fences nothing, nor one
   * of a broker in controlled shutdown.
   */
  async fenceDisconnected(
    brokerId: number,
    brokerEpoch: bigint,
    reason = 'its controller stream closed',
  ): Promise<boolean> {
    const broker = this.context.state.brokers.get(brokerId);
    if (broker === undefined || broker.record.fenced || broker.brokerEpoch !== brokerEpoch) {
      return false;
    }
    // A broker that shut down in order already handed its leaderships over; what it alone can
    // lead stays with it until its session ends, as before.
    if (this.sessions.get(brokerId)?.shuttingDown === true) return false;
    await this.fence(brokerId, reason);
    return true;
  }

  /**
   * Fences a silent broker: moves everything it held, then marks it fenced. Each partition's
   * move stands alone, so the moves go in bounded transactions (thousands of partitions do not
   * fit one); the mark comes last, so a controller that dies in between leaves a broker that is
   * still unfenced, whose session the next controller times out and fences again.
   */
  async fence(brokerId: number, reason = 'its session expired'): Promise<void> {
    const broker = this.context.state.brokers.get(brokerId);
    if (broker === undefined || broker.record.fenced) return;
    const startedMs = this.clock();
    const keys = this.context.writer.metadataKeys;
    const moved = this.partitionChanges(brokerId, () => true);
    await this.context.writer.commitIndependent(moved.map(toIndependentWrite));
    await this.context.writer.commit(
      [this.context.writer.unchangedSince(keys.broker(brokerId), broker.modRevision)],
      [
        {
          kind: 'put',
          key: keys.broker(brokerId),
          value: encodeRecord({ ...broker.record, fenced: true }),
        },
      ],
    );
    this.sessions.delete(brokerId);
    this.countElections(moved.map((change) => change.change));
    // electionMs: how long the elections and the fence took to write, after the decision; the
    // fault suite's outage breakdown splits detection from election by it.
    this.context.logger.warn(
      { brokerId, partitionsChanged: moved.length, electionMs: this.clock() - startedMs },
      `broker fenced: ${reason}`,
    );
  }

  /**
   * Marks the broker decommissioned (no new replica is placed on it) or clears the mark. Its
   * replicas move off by reassignment, which the caller starts; the mark only keeps new ones away.
   */
  async setDecommissioned(brokerId: number, decommissioned: boolean): Promise<void> {
    const broker = this.context.state.brokers.get(brokerId);
    if (broker === undefined) {
      throw new SpoolError('BROKER_ID_NOT_REGISTERED', `broker ${brokerId} is not registered`);
    }
    if ((broker.record.decommissioned === true) === decommissioned) return;
    const keys = this.context.writer.metadataKeys;
    const { decommissioned: _previous, ...rest } = broker.record;
    const record: BrokerRecord = decommissioned ? { ...rest, decommissioned: true } : rest;
    await this.context.writer.commit(
      [this.context.writer.unchangedSince(keys.broker(brokerId), broker.modRevision)],
      [{ kind: 'put', key: keys.broker(brokerId), value: encodeRecord(record) }],
    );
    this.context.logger.info(
      { brokerId, decommissioned },
      decommissioned ? 'broker decommissioned' : 'broker decommission cleared',
    );
  }

  /**
   * Controlled shutdown: moves the broker's leaderships to other live ISR members and takes it
   * out of ISRs that have other members. Partitions it alone can lead stay with it; they are
   * returned, and the caller decides whether to wait. The broker's record is then marked
   * inControlledShutdown, so its id is free for the next process even if this controller stops
   * before that process registers. The moves go in bounded transactions before the mark, as in
   * fence(): a controller that dies in between leaves the broker to ask again.
   */
  async controlledShutdown(
    brokerId: number,
    brokerEpoch: bigint,
  ): Promise<Array<{ topic: string; partition: number }>> {
    this.checkEpoch(brokerId, brokerEpoch);
    const session = this.sessions.get(brokerId);
    if (session !== undefined) session.shuttingDown = true;
    const moved = this.partitionChanges(brokerId, (change) => change.record.leader !== -1);
    const broker = this.context.state.brokers.get(brokerId);
    assert(broker !== undefined, 'checkEpoch passed, so the broker is registered');
    const keys = this.context.writer.metadataKeys;
    await this.context.writer.commitIndependent(moved.map(toIndependentWrite));
    const current = this.context.state.brokers.get(brokerId) ?? broker;
    await this.context.writer.commit(
      [this.context.writer.unchangedSince(keys.broker(brokerId), current.modRevision)],
      [
        {
          kind: 'put',
          key: keys.broker(brokerId),
          value: encodeRecord({ ...current.record, inControlledShutdown: true }),
        },
      ],
    );
    this.countElections(moved.map((change) => change.change));
    const remaining: Array<{ topic: string; partition: number }> = [];
    for (const partition of this.context.state.allPartitions()) {
      if (partition.record.leader === brokerId)
        remaining.push({ topic: partition.topic, partition: partition.partition });
    }
    this.context.logger.info(
      { brokerId, moved: moved.length, remaining: remaining.length },
      'controlled shutdown',
    );
    return remaining;
  }

  private partitionChanges(
    brokerId: number,
    accept: (change: PartitionChange) => boolean,
  ): Array<{ key: string; modRevision: bigint; change: PartitionChange }> {
    const live = this.context.liveBrokerIds();
    live.delete(brokerId);
    const keys = this.context.writer.metadataKeys;
    const changes: Array<{ key: string; modRevision: bigint; change: PartitionChange }> = [];
    for (const topic of this.context.state.topics.values()) {
      const unclean =
        effectiveTopicConfig(topic.record.configs, 'unclean.leader.election.enable') === 'true';
      for (const partition of topic.partitions.values()) {
        const change = removeBroker(partition.record, brokerId, live, unclean);
        if (change !== undefined && accept(change)) {
          changes.push({
            key: keys.partition(partition.topic, partition.partition),
            modRevision: partition.modRevision,
            change,
          });
        }
      }
    }
    return changes;
  }

  countElections(changes: readonly PartitionChange[]): void {
    for (const change of changes) {
      if (change.election !== 'none')
        this.context.metrics.leaderElections.inc({ type: change.election });
    }
  }
}

function toIndependentWrite(change: {
  key: string;
  modRevision: bigint;
  change: PartitionChange;
}): IndependentWrite {
  return {
    compare: { key: change.key, kind: 'modRevision', equals: change.modRevision },
    operation: { kind: 'put', key: change.key, value: encodeRecord(change.change.record) },
  };
}

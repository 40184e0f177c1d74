/**
 * Replication, follower side (Kafka's `ReplicaFetcherThread`): one fetcher per leader broker
 * pulls every partition this node follows from that leader over the leader's data port, and
 * appends the batches with the leader's offsets. Each partition goes through two states:
 *
 *   1. Truncating: before its first fetch in a leader epoch, the follower asks the leader where
 *      its own latest epoch ends (OffsetsForLeaderEpoch, KIP-101/279) and truncates its log
 *      there, so a tail the old leader wrote but never replicated is removed and the logs never
 *      diverge.
 *   2. Fetching: fetch from the log end offset; append; take the leader's high watermark (capped
 *      at the local end) and log start offset. The fetch offset is how the leader learns this
 *      follower's position, for the ISR and the high watermark.
 *
 * A partition whose request the leader refuses (a stale or newer leader epoch, not the leader)
 * waits a little and retries; a metadata change moves it to another fetcher or stops it.
 *
 * All partitions go in one request through an incremental fetch session (KIP-227, the leader's
 * side in fetch-session.ts): the first request is a full fetch that opens the session; each
 * later one names only partitions new to it or whose position (fetch offset, leader epoch, log
 * start) changed since it was last sent, and those to forget (removed, truncating, backing off
 * an error). The leader answers only partitions with records or news, and an idle request waits
 * at the leader until an append wakes it or fetchWaitMaxMs passes: an idle round costs this
 * side nothing per partition either. After any failed request, or a session error from the
 * leader, the next request is a full fetch again.
 */
import { backoffMs, sleep, type Logger, type TransportSecurity } from '@spool/common';
import {
  DataPortClient,
  dataPortPartitionsMax,
  dataPortRequestBytesMax,
  type DataPortFetchedPartition,
  type DataPortFetchPartition,
  type DataPortTopicPartition,
  fetchSessionEpochInitial,
  fetchSessionIdNone,
  type ClusterMetadataCache,
} from '@spool/protocol';
import { recordBatchSizeBytes } from '@spool/record-batch';
import { undefinedEpochOffset, type Log } from '@spool/segment-store';
import type { PartitionReplica } from './partition-replica';
import type { ReplicationThrottle } from './replication-throttle';
import { followerThrottlesReplica } from './throttled-replicas';

export interface ReplicaFetcherOptions {
  readonly brokerId: number;
  readonly brokerEpoch: () => bigint;
  readonly fetchMaxBytes: number;
  readonly fetchWaitMaxMs: number;
  readonly logger: Logger;
  readonly metadata: ClusterMetadataCache;
  /** The slow-disk test hook's, only when the fault suite turns it on (slow-disk-test-hook.ts). */
  readonly beforeLogAppend?: () => void;
  /** TLS to leaders' data ports (security.protocol=SSL); plaintext without it. */
  readonly transportSecurity?: TransportSecurity | undefined;
  /**
   * The node's reassignment throttle: partitions this node is being added to (a reassignment's
   * catching-up replicas), and those out of the ISR that the topic's
   * follower.replication.throttled.replicas names here (throttled-replicas.ts), fetch within its
   * rate. None: unthrottled.
   */
  readonly throttle?: ReplicationThrottle;
  /** Bytes appended to replicas being added (Kafka's ReassignmentBytesInPerSec). */
  readonly onReassignmentBytes?: (bytes: number) => void;
  /** A throttled partition was left out of fetches for a while. */
  readonly onThrottled?: () => void;
}

type FetchState = 'truncating' | 'fetching';

/** A partition's fetch position as the leader's session holds it. */
interface SentPosition {
  readonly fetchOffset: bigint;
  readonly leaderEpoch: number;
  readonly logStartOffset: bigint;
}

interface FollowedPartition {
  readonly replica: PartitionReplica;
  state: FetchState;
  /** Skip this partition until then: the leader refused it. */
  retryAfterMs: number;
  /** The epoch to ask the leader about next (KIP-279 may ask about older ones). */
  askedEpoch: number | undefined;
  askRounds: number;
  /** What the session holds for it; undefined when the session does not hold it. */
  sent: SentPosition | undefined;
}

/** OffsetsForLeaderEpoch rounds per truncation before falling back to the high watermark. */
const askRoundsMax = 16;

const requestTimeoutMarginMs = 5_000;
/** How long a partition whose append failed waits before it truncates and fetches again. */
const appendFailureBackoffMs = 500;
/** How long a partition the leader refused waits before it is asked for again. */
const refusedBackoffMs = 200;
/** With no session and nothing ready (everything backing off), the loop looks again after this. */
const nothingReadyPauseMs = 50;
/**
 * The partitions of one request stay within the data port's request bound with room for the
 * header and the forgotten partitions: each costs its topic's bytes and 30 more.
 */
const partitionsBytesMax = dataPortRequestBytesMax / 2;
const partitionBytesOverhead = 30;

export class ReplicaFetcher {
  private readonly partitions = new Map<string, FollowedPartition>();
  /** Partitions to truncate before they fetch (state truncating). */
  private readonly truncating = new Set<FollowedPartition>();
  /** Partitions skipped until their retryAfterMs. */
  private readonly backingOff = new Set<FollowedPartition>();
  /** Fetching partitions whose position may differ from what the session holds. */
  private readonly changed = new Set<FollowedPartition>();
  /** Partitions the session holds and must drop, by name. */
  private readonly forgotten = new Map<string, DataPortTopicPartition>();
  private session: { id: number; nextEpoch: number } | undefined;
  private client: DataPortClient | undefined;
  private running = true;
  private readonly loop: Promise<void>;
  private wakeIdle: () => void = () => {};

  constructor(
    readonly leaderId: number,
    private readonly options: ReplicaFetcherOptions,
  ) {
    this.loop = this.run();
  }

  get partitionCount(): number {
    return this.partitions.size;
  }

  add(replica: PartitionReplica): void {
    const followed: FollowedPartition = {
      replica,
      state: 'truncating',
      retryAfterMs: 0,
      askedEpoch: undefined,
      askRounds: 0,
      sent: undefined,
    };
    this.remove(replica.name);
    this.partitions.set(replica.name, followed);
    this.truncating.add(followed);
    this.wakeIdle();
  }

  remove(name: string): void {
    const followed = this.partitions.get(name);
    if (followed === undefined) return;
    this.leaveSession(followed);
    this.partitions.delete(name);
    this.truncating.delete(followed);
    this.backingOff.delete(followed);
    this.changed.delete(followed);
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wakeIdle();
    this.client?.close();
    await this.loop;
  }

  private async run(): Promise<void> {
    for (let failures = 0; this.running;) {
      if (this.partitions.size === 0) {
        await new Promise<void>((resolve) => {
          this.wakeIdle = resolve;
          setTimeout(resolve, 1_000);
        });
        continue;
      }
      try {
        const client = await this.connect();
        this.releaseDueBackoffs(Date.now());
        await this.truncatePartitions(client);
        await this.fetchOnce(client);
        failures = 0;
      } catch (error) {
        failures++;
        this.client?.close();
        this.client = undefined;
        this.resetSession();
        if (this.running) {
          this.options.logger.debug(
            { err: error, leaderId: this.leaderId },
            'replica fetch failed; retrying',
          );
          await sleep(
            backoffMs(Math.min(failures, 6), { backoffInitialMs: 50, backoffMaxMs: 1_000 }),
          );
        }
      }
    }
  }

  private async connect(): Promise<DataPortClient> {
    if (this.client !== undefined && !this.client.isClosed) return this.client;
    const endpoint = this.options.metadata.endpoint(this.leaderId, 'data');
    if (endpoint === undefined)
      throw new Error(`no data endpoint known for broker ${this.leaderId}`);
    this.client = await DataPortClient.connect(endpoint.host, endpoint.port, {
      connectTimeoutMs: 5_000,
      ...(this.options.transportSecurity === undefined
        ? {}
        : { tls: this.options.transportSecurity.tlsConnectOptions() }),
    });
    return this.client;
  }

  /** Partitions whose back-off ended become ready again (only those backing off are looked at). */
  private releaseDueBackoffs(nowMs: number): void {
    for (const followed of this.backingOff) {
      if (followed.retryAfterMs > nowMs) continue;
      this.backingOff.delete(followed);
      if (followed.state === 'fetching') this.changed.add(followed);
    }
  }

  /** Whether this node is one of the partition's adding replicas (a reassignment's new one). */
  private isBeingAdded(followed: FollowedPartition): boolean {
    const { topic, partition } = followed.replica;
    const metadata = this.options.metadata.partition(topic, partition);
    return metadata?.addingReplicas.includes(this.options.brokerId) === true;
  }

  /** Whether the throttle holds this partition's fetches (throttled-replicas.ts). */
  private isThrottled(followed: FollowedPartition): boolean {
    const { topic, partition } = followed.replica;
    return followerThrottlesReplica(this.options.metadata, topic, partition, this.options.brokerId);
  }

  /**
   * A partition being added waits out the throttle's delay while the node is over its rate: it
   * leaves the session (the leader stops sending it) until then. Returns whether it waits.
   */
  private throttleIfOverQuota(followed: FollowedPartition): boolean {
    const throttle = this.options.throttle;
    if (throttle === undefined || !throttle.enabled || this.backingOff.has(followed)) return false;
    const delayMs = throttle.delayMs();
    if (delayMs === 0 || !this.isThrottled(followed)) return false;
    this.backOff(followed, delayMs);
    this.options.onThrottled?.();
    return true;
  }

  private backOff(followed: FollowedPartition, delayMs: number): void {
    followed.retryAfterMs = Date.now() + delayMs;
    this.backingOff.add(followed);
    this.changed.delete(followed);
    this.leaveSession(followed);
  }

  private startTruncating(followed: FollowedPartition): void {
    followed.state = 'truncating';
    this.truncating.add(followed);
    this.changed.delete(followed);
    this.leaveSession(followed);
  }

  /** The session stops holding the partition: the next request forgets it. */
  private leaveSession(followed: FollowedPartition): void {
    if (followed.sent === undefined) return;
    followed.sent = undefined;
    const { topic, partition, name } = followed.replica;
    this.forgotten.set(name, { topic, partition });
  }

  /** After a failure or a session error: the next request is a full fetch. */
  private resetSession(): void {
    if (this.session === undefined && this.forgotten.size === 0) return;
    this.session = undefined;
    this.forgotten.clear();
    for (const followed of this.partitions.values()) {
      followed.sent = undefined;
      if (followed.state === 'fetching' && !this.backingOff.has(followed)) {
        this.changed.add(followed);
      }
    }
  }

  /** Step 1 for every partition that needs it: find where the logs agree, cut the rest. */
  private async truncatePartitions(client: DataPortClient): Promise<void> {
    if (this.truncating.size === 0) return;
    const ready = [...this.truncating].filter((followed) => !this.backingOff.has(followed));
    if (ready.length === 0) return;
    const budget = new RequestBudget();
    const withEpochs = ready.filter(
      (followed) => followed.replica.log.latestEpoch >= 0 && budget.take(followed.replica.topic),
    );
    for (const followed of ready) {
      if (followed.replica.log.latestEpoch < 0)
        this.truncate(followed, followed.replica.highWatermark, 'no epochs in the local log');
    }
    if (withEpochs.length === 0) return;
    const response = await client.offsetForLeaderEpoch(
      {
        replicaId: this.options.brokerId,
        partitions: withEpochs.map((followed) => ({
          topic: followed.replica.topic,
          partition: followed.replica.partition,
          currentLeaderEpoch: followed.replica.assignment.leaderEpoch,
          leaderEpoch: followed.askedEpoch ?? followed.replica.log.latestEpoch,
        })),
      },
      { timeoutMs: requestTimeoutMarginMs },
    );
    for (const answer of response.partitions) {
      const followed = this.partitions.get(`${answer.topic}-${answer.partition}`);
      if (followed === undefined || followed.state !== 'truncating') continue;
      if (answer.errorCode !== '') {
        this.backOff(followed, refusedBackoffMs);
        continue;
      }
      const decision = divergence(
        followed.replica.log,
        followed.askedEpoch ?? followed.replica.log.latestEpoch,
        answer,
        followed.replica.highWatermark,
      );
      if ('askAboutEpoch' in decision && followed.askRounds < askRoundsMax) {
        followed.askedEpoch = decision.askAboutEpoch;
        followed.askRounds++;
        continue;
      }
      const target =
        'truncateTo' in decision ? decision.truncateTo : followed.replica.highWatermark;
      this.truncate(
        followed,
        target,
        `leader epoch ${answer.leaderEpoch} ends at ${answer.endOffset}`,
      );
    }
  }

  private truncate(followed: FollowedPartition, target: bigint, reason: string): void {
    const log = followed.replica.log;
    if (target < log.logEndOffset) {
      const { bytesTruncated } = followed.replica.producerState.truncateTo(target);
      this.options.logger.info(
        {
          partition: followed.replica.name,
          truncatedTo: target.toString(),
          bytesTruncated,
          reason,
        },
        'follower truncated its divergent tail',
      );
    }
    followed.state = 'fetching';
    followed.askedEpoch = undefined;
    followed.askRounds = 0;
    this.truncating.delete(followed);
    this.changed.add(followed);
  }

  /** Step 2: one fetch through the session (a full one when there is none). */
  private async fetchOnce(client: DataPortClient): Promise<void> {
    const full = this.session === undefined;
    const sending = full ? this.readyForFullFetch() : this.changedPositions();
    if (full && sending.length === 0) {
      await sleep(nothingReadyPauseMs);
      return;
    }
    const forgottenBudget = new RequestBudget();
    const forgotten = full
      ? []
      : [...this.forgotten.values()].filter(({ topic }) => forgottenBudget.take(topic));
    const sessionEpoch = this.session?.nextEpoch ?? fetchSessionEpochInitial;
    const partitions = sending.map(({ followed, position }): DataPortFetchPartition => ({
      topic: followed.replica.topic,
      partition: followed.replica.partition,
      fetchOffset: position.fetchOffset,
      currentLeaderEpoch: position.leaderEpoch,
      logStartOffset: position.logStartOffset,
      partitionMaxBytes: this.options.fetchMaxBytes,
    }));
    const response = await client.fetch(
      {
        replicaId: this.options.brokerId,
        brokerEpoch: this.options.brokerEpoch(),
        maxWaitMs: this.options.fetchWaitMaxMs,
        minBytes: 1,
        maxBytes: this.options.fetchMaxBytes,
        partitions,
        session: {
          sessionId: this.session?.id ?? fetchSessionIdNone,
          sessionEpoch,
          forgottenPartitions: forgotten,
        },
      },
      {
        timeoutMs: this.options.fetchWaitMaxMs + requestTimeoutMarginMs,
        sessionPartitionsMax: this.partitions.size,
      },
    );
    const answer = response.session;
    if (answer === undefined || answer.errorCode !== '') {
      this.options.logger.debug(
        { leaderId: this.leaderId, error: answer?.errorCode, message: answer?.errorMessage },
        'fetch session lost; starting a new one',
      );
      this.resetSession();
      return;
    }
    // What the leader now holds: the positions sent, without the forgotten partitions.
    for (const { topic, partition } of forgotten) this.forgotten.delete(`${topic}-${partition}`);
    for (const { followed, position } of sending) {
      if (this.partitions.get(followed.replica.name) !== followed) continue;
      followed.sent = position;
      this.changed.delete(followed);
    }
    this.session =
      answer.sessionId === fetchSessionIdNone
        ? undefined
        : { id: answer.sessionId, nextEpoch: sessionEpoch >= 0x7fffffff ? 1 : sessionEpoch + 1 };
    if (this.session === undefined) this.resetSession();
    for (const fetched of response.partitions) {
      const followed = this.partitions.get(`${fetched.topic}-${fetched.partition}`);
      if (followed === undefined || followed.state !== 'fetching') continue;
      this.applyFetched(followed, fetched);
    }
  }

  /** A full fetch names every fetching partition not backing off. */
  private readyForFullFetch(): Array<{ followed: FollowedPartition; position: SentPosition }> {
    const ready: Array<{ followed: FollowedPartition; position: SentPosition }> = [];
    const budget = new RequestBudget();
    for (const followed of this.partitions.values()) {
      if (followed.state !== 'fetching' || this.backingOff.has(followed)) continue;
      if (this.throttleIfOverQuota(followed)) continue;
      if (!budget.take(followed.replica.topic)) break;
      ready.push({ followed, position: positionOf(followed.replica) });
    }
    return ready;
  }

  /** An incremental fetch names the partitions whose position differs from the session's. */
  private changedPositions(): Array<{ followed: FollowedPartition; position: SentPosition }> {
    const sending: Array<{ followed: FollowedPartition; position: SentPosition }> = [];
    const budget = new RequestBudget();
    for (const followed of [...this.changed]) {
      if (this.throttleIfOverQuota(followed)) continue;
      const position = positionOf(followed.replica);
      if (followed.sent !== undefined && samePosition(followed.sent, position)) {
        this.changed.delete(followed);
        continue;
      }
      if (!budget.take(followed.replica.topic)) break;
      sending.push({ followed, position });
    }
    return sending;
  }

  private applyFetched(followed: FollowedPartition, answer: DataPortFetchedPartition): void {
    const { replica } = followed;
    const log = replica.log;
    if (answer.errorCode === 'OFFSET_OUT_OF_RANGE') {
      if (log.logEndOffset < answer.logStartOffset) {
        replica.producerState.truncateFullyAndStartAt(answer.logStartOffset);
        this.changed.add(followed);
        this.options.logger.info(
          { partition: replica.name, startAt: answer.logStartOffset.toString() },
          "follower restarted its log at the leader's start",
        );
      } else {
        this.startTruncating(followed);
      }
      return;
    }
    if (answer.errorCode !== '') {
      this.backOff(followed, refusedBackoffMs);
      this.options.logger.debug(
        { partition: replica.name, error: answer.errorCode, message: answer.errorMessage },
        'leader refused a replica fetch',
      );
      return;
    }
    if (answer.records.length > 0) {
      try {
        for (const records of segmentSizedGroups(answer.records, log.config.segmentBytes)) {
          this.options.beforeLogAppend?.();
          replica.producerState.appendAsFollower(records, replica.assignment.leaderEpoch);
        }
      } catch (error) {
        // Records that do not continue this log mean it diverged: find the agreement point again,
        // after a pause, so an append that keeps failing does not spin.
        this.startTruncating(followed);
        followed.retryAfterMs = Date.now() + appendFailureBackoffMs;
        this.backingOff.add(followed);
        this.options.logger.warn(
          { err: error, partition: replica.name },
          'replica append failed; truncating again',
        );
        return;
      }
      replica.wake();
      this.changed.add(followed);
      const bytes = answer.records.length;
      if (this.isBeingAdded(followed)) this.options.onReassignmentBytes?.(bytes);
      // The metadata lookups only when a rate is in effect: this runs for every answer.
      const throttle = this.options.throttle;
      if (throttle?.enabled === true && this.isThrottled(followed)) throttle.record(bytes);
    }
    replica.updateHighWatermarkAsFollower(answer.highWatermark);
    this.throttleIfOverQuota(followed);
    if (answer.logStartOffset > log.logStartOffset && answer.logStartOffset <= log.logEndOffset) {
      log.deleteRecordsBefore(answer.logStartOffset);
      this.changed.add(followed);
    }
  }
}

/** Counts partitions into one request: at most dataPortPartitionsMax, and partitionsBytesMax. */
class RequestBudget {
  private count = 0;
  private sizeBytes = 0;

  take(topic: string): boolean {
    const entryBytes = Buffer.byteLength(topic, 'utf8') + partitionBytesOverhead;
    if (this.count >= dataPortPartitionsMax) return false;
    if (this.sizeBytes + entryBytes > partitionsBytesMax) return false;
    this.count++;
    this.sizeBytes += entryBytes;
    return true;
  }
}

function positionOf(replica: PartitionReplica): SentPosition {
  return {
    fetchOffset: replica.log.logEndOffset,
    leaderEpoch: replica.assignment.leaderEpoch,
    logStartOffset: replica.log.logStartOffset,
  };
}

function samePosition(left: SentPosition, right: SentPosition): boolean {
  return (
    left.fetchOffset === right.fetchOffset &&
    left.leaderEpoch === right.leaderEpoch &&
    left.logStartOffset === right.logStartOffset
  );
}

/**
 * Cuts fetched batches into runs of whole batches that each fit a segment. One fetch holds up to
 * replica.fetch.max.bytes, which may exceed the topic's segment.bytes, and the log refuses a
 * single append larger than a segment (it could not roll inside it); batch by batch, the log
 * rolls between runs as the leader's did.
 */
export function* segmentSizedGroups(records: Buffer, segmentBytes: number): Generator<Buffer> {
  let start = 0;
  let end = 0;
  while (end < records.length) {
    const sizeBytes = recordBatchSizeBytes(records, end);
    if (end > start && end - start + sizeBytes > segmentBytes) {
      yield records.subarray(start, end);
      start = end;
    }
    end = Math.min(records.length, end + sizeBytes);
  }
  if (end > start) yield records.subarray(start, end);
}

/**
 * Where a follower's log stops agreeing with its leader's (KIP-101 as refined by KIP-279), from
 * the leader's answer to "where does epoch E end?", E being the follower's latest epoch at first:
 *
 *   1. The leader knows nothing of E: keep only what was committed (the HW).
 *   2. The leader answers with E itself: the logs agree up to where E ends on both sides.
 *   3. The leader answers with an older epoch L (the follower wrote in epochs the leader never
 *      saw, e.g. as a brief leader). If the follower has L too, the logs agree up to where L ends
 *      on both sides; if not, ask again about the follower's own epoch just below L.
 */
export type Divergence = { readonly truncateTo: bigint } | { readonly askAboutEpoch: number };

export function divergence(
  log: Pick<Log, 'latestEpoch' | 'logEndOffset' | 'endOffsetForLeaderEpoch'>,
  askedEpoch: number,
  answer: { leaderEpoch: number; endOffset: bigint },
  highWatermark: bigint,
): Divergence {
  const smaller = (left: bigint, right: bigint): bigint => (left < right ? left : right);
  if (answer.endOffset === undefinedEpochOffset || answer.leaderEpoch < 0)
    return { truncateTo: highWatermark };
  const local = log.endOffsetForLeaderEpoch(answer.leaderEpoch);
  if (answer.leaderEpoch === askedEpoch || local.epoch === answer.leaderEpoch) {
    const localEnd = local.endOffset < 0n ? log.logEndOffset : local.endOffset;
    return { truncateTo: smaller(answer.endOffset, localEnd) };
  }
  if (local.epoch < 0) return { truncateTo: highWatermark };
  return { askAboutEpoch: local.epoch };
}

import { SpoolError, backoffMs, sleep, type Logger } from '@spool/common';
import type { OffsetCommitResponse, ProtoError } from '@spool/protocol';
import type { ConsumerConfig } from './config';
import {
  ClientErrorCode,
  coordinatorRetriableCodes,
  fromProtoError,
  partitionName,
  toSpoolError,
} from './errors';
import type { GatewayConnection } from './gateway-connection';

/**
 * A group member's committed offsets (Kafka's OffsetCommit and OffsetFetch through the gateway).
 *
 * The committer tracks the partitions the member owns and, for each, the next offset the
 * application has finished with (`markProcessed`). A commit sends those offsets with the
 * member's id and current epoch, which the coordinator checks, so a member that was fenced (a
 * zombie) cannot move a partition that is someone else's by now. What gets committed is never
 * ahead of what the handler finished: that is the at-least-once default.
 *
 * Two kinds of commit:
 * 1. `manual` (the application's `commit()`): one attempt; an error reaches the caller as it
 *    came, a STALE_MEMBER_EPOCH with a message that says what happened and what to do;
 * 2. `internal` (auto commit, on revocation, on close, before processing): retried after a
 *    backoff on STALE_MEMBER_EPOCH (the next heartbeat brings the new epoch) and on the
 *    coordinator moving, at most `retries` times, and only while the partitions are still owned.
 */

export interface MemberIdentity {
  readonly memberId: string;
  readonly memberEpoch: number;
}

export interface TopicPartitionOffset {
  readonly topic: string;
  readonly partition: number;
  /** The next offset to consume: one past the last record processed, as Kafka commits. */
  readonly offset: bigint;
}

export type CommitKind = 'manual' | 'internal';

interface TrackedPartition {
  readonly topic: string;
  readonly partition: number;
  /** The next offset after what the application finished; undefined before the first. */
  processedOffset: bigint | undefined;
  /** What the coordinator holds, as far as this member knows. */
  committedOffset: bigint | undefined;
}

export class OffsetCommitter {
  private readonly tracked = new Map<string, TrackedPartition>();

  constructor(
    private readonly connection: GatewayConnection,
    private readonly groupId: string,
    private readonly config: ConsumerConfig,
    private readonly logger: Logger,
    private readonly identity: () => MemberIdentity,
  ) {}

  /** Starts tracking an owned partition whose committed offset is `committedOffset`. */
  track(topic: string, partition: number, committedOffset: bigint | undefined): void {
    this.tracked.set(partitionKey(topic, partition), {
      topic,
      partition,
      processedOffset: undefined,
      committedOffset,
    });
  }

  untrack(topic: string, partition: number): void {
    this.tracked.delete(partitionKey(topic, partition));
  }

  untrackAll(): void {
    this.tracked.clear();
  }

  isTracked(topic: string, partition: number): boolean {
    return this.tracked.has(partitionKey(topic, partition));
  }

  /** The application finished everything below `nextOffset`; ignored once not owned. */
  markProcessed(topic: string, partition: number, nextOffset: bigint): void {
    const state = this.tracked.get(partitionKey(topic, partition));
    if (state !== undefined) state.processedOffset = nextOffset;
  }

  /** Processed offsets not committed yet, of the partitions given or of every owned one. */
  uncommittedOffsets(
    partitions?: readonly { topic: string; partition: number }[],
  ): TopicPartitionOffset[] {
    const states =
      partitions === undefined
        ? [...this.tracked.values()]
        : partitions.flatMap((candidate) => {
            const state = this.tracked.get(partitionKey(candidate.topic, candidate.partition));
            return state === undefined ? [] : [state];
          });
    return states
      .filter(
        (state) =>
          state.processedOffset !== undefined && state.processedOffset !== state.committedOffset,
      )
      .map((state) => ({
        topic: state.topic,
        partition: state.partition,
        offset: state.processedOffset!,
      }));
  }

  /** Commits `offsets` under the member's id and epoch; see the kinds above. */
  async commit(offsets: readonly TopicPartitionOffset[], kind: CommitKind): Promise<void> {
    if (offsets.length === 0) return;
    for (let attempt = 1; ; attempt++) {
      const pending =
        kind === 'manual'
          ? offsets
          : offsets.filter((offset) => this.isTracked(offset.topic, offset.partition));
      if (pending.length === 0) return;
      try {
        await this.commitOnce(pending);
        return;
      } catch (error) {
        const failure = toSpoolError(error);
        const retriable =
          failure.code === ClientErrorCode.StaleMemberEpoch ||
          coordinatorRetriableCodes.has(failure.code) ||
          failure.retriable;
        if (kind === 'manual' || !retriable || attempt > this.config.retries) throw failure;
        this.logger.info(
          { code: failure.code, attempt, reason: failure.message },
          'offset commit failed, retrying',
        );
        await sleep(
          backoffMs(attempt, {
            backoffInitialMs: this.config.retryBackoffMs,
            backoffMaxMs: this.config.retryBackoffMaxMs,
          }),
        );
      }
    }
  }

  /** Committed offsets of `partitions` (undefined: nothing committed). */
  async fetchCommitted(
    partitions: readonly { topic: string; partition: number }[],
  ): Promise<Map<string, bigint | undefined>> {
    const committed = new Map<string, bigint | undefined>();
    if (partitions.length === 0) return committed;
    const response = await this.connection.call(
      (client) => client.offsetFetch,
      {
        groupId: this.groupId,
        partitions: partitions.map(({ topic, partition }) => ({ topic, partition })),
      },
      this.callOptions(),
    );
    if (isError(response.error)) {
      throw fromProtoError(response.error, `group ${this.groupId}: fetching committed offsets`);
    }
    for (const listed of response.offsets) {
      if (isError(listed.error)) {
        throw fromProtoError(
          listed.error,
          `group ${this.groupId}: committed offset of ${partitionName(listed.topic, listed.partition)}`,
        );
      }
      committed.set(
        partitionKey(listed.topic, listed.partition),
        listed.offset >= 0n ? listed.offset : undefined,
      );
    }
    return committed;
  }

  private async commitOnce(offsets: readonly TopicPartitionOffset[]): Promise<void> {
    const { memberId, memberEpoch } = this.identity();
    let response: OffsetCommitResponse;
    try {
      response = await this.connection.callOnce(
        (client) => client.offsetCommit,
        {
          groupId: this.groupId,
          memberId,
          memberEpoch,
          offsets: offsets.map(({ topic, partition, offset }) => ({
            topic,
            partition,
            offset,
            metadata: '',
            leaderEpoch: -1,
          })),
        },
        this.config.requestTimeoutMs,
      );
    } catch (error) {
      throw this.describeCommitError(toSpoolError(error), offsets, memberId, memberEpoch);
    }
    const failed = response.results.filter((result) => isError(result.error));
    for (const result of response.results) {
      if (isError(result.error)) continue;
      const offset = offsets.find(
        (candidate) => candidate.topic === result.topic && candidate.partition === result.partition,
      );
      const state = this.tracked.get(partitionKey(result.topic, result.partition));
      if (offset !== undefined && state !== undefined) state.committedOffset = offset.offset;
    }
    if (failed.length === 0) {
      this.logger.debug({ offsets: offsets.length, memberEpoch }, 'offsets committed');
      return;
    }
    const first = failed[0]!;
    const error = fromProtoError(
      first.error!,
      failed.map((result) => partitionName(result.topic, result.partition)).join(', '),
    );
    throw this.describeCommitError(error, offsets, memberId, memberEpoch);
  }

  /** Says which group, member and epoch a commit failure is about, and what it means. */
  private describeCommitError(
    error: SpoolError,
    offsets: readonly TopicPartitionOffset[],
    memberId: string,
    memberEpoch: number,
  ): SpoolError {
    const subject =
      `commit of ${offsets.length} offsets for group ${this.groupId} ` +
      `(member ${memberId === '' ? '(none)' : memberId} at epoch ${memberEpoch})`;
    const hint =
      error.code === ClientErrorCode.StaleMemberEpoch
        ? ': the group rebalanced and the member epoch moved on; the offsets were not ' +
          'committed. Commit again after the next heartbeat (auto commit does) or, if the ' +
          'partitions were revoked, leave them to their new owner'
        : error.code === ClientErrorCode.UnknownMemberId ||
            error.code === ClientErrorCode.FencedMemberEpoch
          ? ': the member is no longer in the group (fenced or evicted); its partitions belong ' +
            'to others now and the offsets were not committed'
          : '';
    return new SpoolError(error.code, `${subject} failed: ${error.message}${hint}`, {
      retriable: error.retriable,
      cause: error,
      details: error.details,
    });
  }

  private callOptions(): {
    deadlineMs: number;
    attempts: number;
    backoffInitialMs: number;
    backoffMaxMs: number;
  } {
    return {
      deadlineMs: this.config.requestTimeoutMs,
      attempts: this.config.retries + 1,
      backoffInitialMs: this.config.retryBackoffMs,
      backoffMaxMs: this.config.retryBackoffMaxMs,
    };
  }
}

export function isError(error: ProtoError | undefined): error is ProtoError {
  return error !== undefined && error.code !== '';
}

/** The key of a partition in the maps of the group code. */
export function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

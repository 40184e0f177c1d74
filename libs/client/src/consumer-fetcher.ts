import { CommonErrorCode, backoffMs, type Logger, type SpoolError } from '@spool/common';
import { OffsetSpec, type FetchedPartition } from '@spool/protocol';
import {
  batchLengthPosition,
  logOverheadSizeBytes,
  openRecordBatch,
  type RecordFields,
} from '@spool/record-batch';
import { AsyncQueue } from './async-queue';
import type { ConsumerConfig, OffsetResetPolicy } from './config';
import { ConsumeStream, type ConsumeStreamEvent } from './consume-stream';
import {
  ClientErrorCode,
  clientError,
  fromProtoError,
  partitionName,
  toSpoolError,
} from './errors';
import type { GatewayConnection } from './gateway-connection';
import { listOffsets } from './list-offsets';
import type { ConsumedMessage } from './message';

/**
 * The consumer's engine (Kafka's Fetcher plus SubscriptionState): the position of each assigned
 * partition, one Consume stream over the partitions that are not paused, and a pull loop that
 * turns the stream's responses into chunks of decoded messages. The application pulls a chunk
 * with `next`, and `finish`es it when done; only then is the chunk's credit granted back.
 *
 * Positions: a partition's position is the next offset to deliver. A batch may start below it
 * (the gateway sends whole batches), so records below the position are skipped; after a chunk,
 * the position moves past its last batch, control batches and compaction gaps included. A
 * partition without a position is reset by ListOffsets before the stream opens: to its log start
 * offset (earliest), its high watermark (latest), or not at all (none: NO_OFFSET_FOR_PARTITION).
 *
 * Every seek, pause, resume, reset or assignment change bumps the partition's epoch and asks for
 * a new stream; chunks of an older epoch or stream are dropped, never delivered.
 *
 * Stream errors (how each is handled):
 * 1. OFFSET_OUT_OF_RANGE for a partition (its position is past the log end or before the log
 *    start): reset it by autoOffsetReset, to the log start offset (earliest) or the high
 *    watermark (latest), and tell the consumer where (`onOffsetReset`); with `none`, fail with
 *    OFFSET_OUT_OF_RANGE naming topic, partition, the offset and the valid range.
 * 2. another retriable error: open a new stream after a backoff, at most `retries` times in a
 *    row (any response resets the count);
 * 3. the gateway ending the stream cleanly: open a new one after the base backoff;
 * 4. a non-retriable error: fail, naming the partition.
 */

export interface PartitionAssignment {
  readonly topic: string;
  readonly partition: number;
  /** Where to start; absent: reset by `resetPolicy`. */
  readonly position?: bigint;
  readonly resetPolicy: OffsetResetPolicy;
}

/** A position found out of range and reset by autoOffsetReset (Kafka logs it; we tell it). */
export interface OffsetReset {
  readonly topic: string;
  readonly partition: number;
  /** The position that was out of range. */
  readonly offset: bigint;
  /** The partition's log start offset and high watermark when it was refused (-1n: unknown). */
  readonly logStartOffset: bigint;
  readonly highWatermark: bigint;
  readonly policy: 'earliest' | 'latest';
  /** The position the partition resumes at. */
  readonly resetTo: bigint;
}

/** What a refused position was refused against. */
interface OutOfRange {
  readonly offset: bigint;
  readonly logStartOffset: bigint;
  readonly highWatermark: bigint;
}

interface PartitionState {
  readonly topic: string;
  readonly partition: number;
  /** The next offset to deliver to the application. */
  position: bigint | undefined;
  /** The next offset expected from the stream: ahead of `position` by the chunks pending. */
  fetchPosition: bigint;
  resetPolicy: OffsetResetPolicy;
  paused: boolean;
  /** Not fetched until released: a group member's new partition while its callback runs. */
  held: boolean;
  highWatermark: bigint;
  epoch: number;
  /** Set while a position refused as out of range waits for its reset. */
  outOfRange?: OutOfRange;
}

export interface FetchedChunk {
  readonly topic: string;
  readonly partition: number;
  readonly highWatermark: bigint;
  readonly messages: readonly ConsumedMessage[];
  /** The position after this chunk: past its last batch. */
  readonly nextPosition: bigint;
  readonly creditBytes: number;
  readonly generation: number;
  readonly epoch: number;
}

/** Credit per partition, in pushes of maxBytesPerPartition, that a stream is granted at once. */
const pushesPerPartitionInWindow = 2;

/** The one RecordFields every decode reads into; its values are copied out before the next. */
const recordFields: RecordFields = {
  offset: 0n,
  timestampMs: 0n,
  key: null,
  value: null,
  headers: [],
  offsetDelta: 0,
};

type FetcherEvent = ConsumeStreamEvent | { readonly kind: 'wakeup' };

export class ConsumerFetcher {
  private readonly states = new Map<string, PartitionState>();
  private readonly events = new AsyncQueue<FetcherEvent>();
  private readonly pending: FetchedChunk[] = [];
  private stream: ConsumeStream | undefined;
  private generation = 0;
  private restartNeeded = true;
  private failuresInARow = 0;
  /** How long the next restart waits first: a backoff after a failure, else 0. */
  private restartDelayMs = 0;
  private stopped = false;
  private failure: SpoolError | undefined;
  private wakeSleeper: (() => void) | undefined;

  constructor(
    private readonly connection: GatewayConnection,
    private readonly config: ConsumerConfig,
    private readonly logger: Logger,
    private readonly onOffsetReset: (reset: OffsetReset) => void = () => {},
  ) {
    // The connection moved to the next gateway (the one in use is gone or paused): the stream
    // follows at once instead of waiting on a gateway that may never answer.
    connection.onFailOver(() => {
      this.restartDelayMs = 0;
      this.requestRestart();
    });
  }

  /** Replaces the assignment; partitions kept keep their position unless a new one is given. */
  assign(assignments: readonly PartitionAssignment[]): void {
    const next = new Map<string, PartitionState>();
    for (const assignment of assignments) {
      const key = keyOf(assignment.topic, assignment.partition);
      const previous = this.states.get(key);
      next.set(key, {
        topic: assignment.topic,
        partition: assignment.partition,
        position: assignment.position ?? previous?.position,
        fetchPosition: -1n,
        resetPolicy: assignment.resetPolicy,
        paused: previous?.paused ?? false,
        held: previous?.held ?? false,
        highWatermark: previous?.highWatermark ?? -1n,
        epoch: (previous?.epoch ?? 0) + 1,
      });
    }
    this.states.clear();
    for (const [key, state] of next) this.states.set(key, state);
    this.requestRestart();
  }

  /**
   * Adds partitions (a group member's new ones) without touching the others, which keep their
   * positions and any chunk being delivered. `held` ones are not fetched until `release`.
   */
  addPartitions(assignments: readonly PartitionAssignment[], options: { held: boolean }): void {
    for (const assignment of assignments) {
      const key = keyOf(assignment.topic, assignment.partition);
      const previous = this.states.get(key);
      this.states.set(key, {
        topic: assignment.topic,
        partition: assignment.partition,
        position: assignment.position,
        fetchPosition: -1n,
        resetPolicy: assignment.resetPolicy,
        paused: false,
        held: options.held,
        highWatermark: -1n,
        epoch: (previous?.epoch ?? 0) + 1,
      });
    }
    this.requestRestart();
  }

  /** Lets held partitions be fetched. */
  release(partitions: readonly { topic: string; partition: number }[]): void {
    for (const { topic, partition } of partitions) {
      const state = this.states.get(keyOf(topic, partition));
      if (state === undefined || !state.held) continue;
      state.held = false;
      state.epoch += 1;
    }
    this.requestRestart();
  }

  /** Stops fetching and delivering these partitions (revoked or lost); the rest go on. */
  removePartitions(partitions: readonly { topic: string; partition: number }[]): void {
    let removed = false;
    for (const { topic, partition } of partitions) {
      removed = this.states.delete(keyOf(topic, partition)) || removed;
    }
    if (removed) this.requestRestart();
  }

  /** Makes `next` throw `error`: consumption cannot go on (a group membership failed). */
  fail(error: SpoolError): void {
    this.failure = error;
    this.wakeSleeper?.();
    this.events.push({ kind: 'wakeup' });
  }

  assignedPartitions(): { topic: string; partition: number }[] {
    return [...this.states.values()].map(({ topic, partition }) => ({ topic, partition }));
  }

  seek(topic: string, partition: number, offset: bigint): void {
    const state = this.stateOf(topic, partition, 'seek');
    state.position = offset;
    state.outOfRange = undefined;
    state.epoch += 1;
    this.requestRestart();
  }

  setPaused(topic: string, partition: number, paused: boolean): void {
    const state = this.stateOf(topic, partition, paused ? 'pause' : 'resume');
    if (state.paused === paused) return;
    state.paused = paused;
    state.epoch += 1;
    this.requestRestart();
  }

  pausedPartitions(): { topic: string; partition: number }[] {
    return [...this.states.values()]
      .filter((state) => state.paused)
      .map(({ topic, partition }) => ({ topic, partition }));
  }

  position(topic: string, partition: number): bigint | undefined {
    return this.states.get(keyOf(topic, partition))?.position;
  }

  /** Is the chunk still about the partition's current position (no seek, pause, reset since)? */
  isCurrent(chunk: FetchedChunk): boolean {
    const state = this.states.get(keyOf(chunk.topic, chunk.partition));
    return state !== undefined && state.epoch === chunk.epoch;
  }

  /** Should delivery of a chunk go on: still current, and no stop asked for. */
  shouldDeliver(chunk: FetchedChunk): boolean {
    return !this.stopped && this.isCurrent(chunk);
  }

  /** The application consumed the chunk up to `offset` (exclusive) and goes on. */
  advance(chunk: FetchedChunk, offset: bigint): void {
    if (!this.isCurrent(chunk)) return;
    this.states.get(keyOf(chunk.topic, chunk.partition))!.position = offset;
  }

  /**
   * The application is done with the chunk: if it took every message (`complete`), move past the
   * chunk's batches; either way, hand its credit back.
   */
  finish(chunk: FetchedChunk, complete: boolean): void {
    if (complete) this.advance(chunk, chunk.nextPosition);
    this.releaseCredit(chunk.creditBytes, chunk.generation);
  }

  /** The next chunk with messages, or undefined once stopped. */
  async next(): Promise<FetchedChunk | undefined> {
    for (;;) {
      if (this.failure !== undefined) throw this.failure;
      if (this.stopped) return undefined;
      const chunk = this.pending.shift();
      if (chunk !== undefined) {
        const current = this.isCurrent(chunk) ? this.withoutDelivered(chunk) : undefined;
        if (current !== undefined) return current;
        this.releaseCredit(chunk.creditBytes, chunk.generation);
        continue;
      }
      if (this.restartNeeded) {
        await this.restart();
        continue;
      }
      this.handle(await this.events.take());
    }
  }

  /**
   * A stream opened while a chunk of the same partition was being delivered starts at the
   * position from before that chunk finished: drop what the application has had since.
   */
  private withoutDelivered(chunk: FetchedChunk): FetchedChunk | undefined {
    const position = this.states.get(keyOf(chunk.topic, chunk.partition))?.position;
    if (position === undefined || chunk.messages.length === 0) return chunk;
    if (chunk.nextPosition <= position) return undefined;
    if (chunk.messages[0]!.offset >= position) return chunk;
    return { ...chunk, messages: chunk.messages.filter((message) => message.offset >= position) };
  }

  /** Lets `next` deliver again after a stop; positions are kept. */
  start(): void {
    this.stopped = false;
    this.failure = undefined;
    this.requestRestart();
  }

  stop(): void {
    this.stopped = true;
    this.closeStream();
    this.wakeSleeper?.();
    this.events.push({ kind: 'wakeup' });
  }

  private handle(event: FetcherEvent): void {
    if (event.kind === 'wakeup' || event.generation !== this.generation) return;
    if (event.kind === 'response') {
      this.failuresInARow = 0;
      for (const fetched of event.response.partitions) this.accept(fetched);
      return;
    }
    if (event.kind === 'end') {
      // A clean close (the gateway restarting or shedding streams) is not a failure: open a new
      // stream after the base backoff, without counting towards `retries`.
      this.logger.info('the gateway ended the Consume stream, opening a new one');
      this.restartDelayMs = this.config.retryBackoffMs;
      this.requestRestart();
      return;
    }
    this.retryOrFail(event.error, this.stream?.gatewayIndex);
  }

  /** One partition of a response: a chunk for the application, an error, or nothing. */
  private accept(fetched: FetchedPartition): void {
    const creditBytes = fetched.records.length;
    const state = this.states.get(keyOf(fetched.topic, fetched.partition));
    if (state === undefined || state.paused || state.held || state.position === undefined) {
      this.releaseCredit(creditBytes, this.generation);
      return;
    }
    const subject = partitionName(state.topic, state.partition);
    if (fetched.error !== undefined && fetched.error.code !== '') {
      this.releaseCredit(creditBytes, this.generation);
      const error = fromProtoError(fetched.error, `${subject} at offset ${state.position}`);
      if (error.code === ClientErrorCode.OffsetOutOfRange) {
        this.resetOutOfRange(state, fetched, error);
        return;
      }
      this.retryOrFail(error);
      return;
    }
    if (fetched.highWatermark >= 0n) state.highWatermark = fetched.highWatermark;
    let decoded: { messages: ConsumedMessage[]; nextPosition: bigint };
    try {
      decoded = this.decode(state, fetched.records, state.fetchPosition);
    } catch (error) {
      throw toSpoolError(error, `${subject} after offset ${state.fetchPosition}`);
    }
    state.fetchPosition = decoded.nextPosition;
    this.pending.push({
      topic: state.topic,
      partition: state.partition,
      highWatermark: state.highWatermark,
      messages: decoded.messages,
      nextPosition: decoded.nextPosition,
      creditBytes,
      generation: this.generation,
      epoch: state.epoch,
    });
  }

  /**
   * Whole batches of `records`; a cut-off batch at the end is left for the next fetch. This is
   * the consumer's per-record hot path: each record costs its message object, its value's view
   * and its offset, nothing more (the reader fills one RecordFields object for all of them).
   */
  private decode(
    state: PartitionState,
    records: Buffer,
    position: bigint,
  ): { messages: ConsumedMessage[]; nextPosition: bigint } {
    const messages: ConsumedMessage[] = [];
    const { topic, partition } = state;
    const options = { verifyCrc: this.config.verifyCrc };
    let nextPosition = position;
    let bytePosition = 0;
    while (bytePosition + logOverheadSizeBytes <= records.length) {
      const batchSizeBytes =
        records.readInt32BE(bytePosition + batchLengthPosition) + logOverheadSizeBytes;
      if (bytePosition + batchSizeBytes > records.length) break;
      const { header, reader } = openRecordBatch(records, bytePosition, options);
      bytePosition += batchSizeBytes;
      const lastOffset = header.lastOffset;
      // A batch wholly below the position, or a control batch, is checked but not delivered.
      const delivered = lastOffset >= nextPosition && !header.isControl;
      const recordCount = header.recordCount;
      for (let index = 0; index < recordCount; index++) {
        if (!delivered) {
          reader.skip();
          continue;
        }
        const record = reader.readInto(recordFields);
        if (record.offset < position) continue;
        messages.push({
          topic,
          partition,
          offset: record.offset,
          timestamp: record.timestampMs,
          key: record.key,
          value: record.value,
          headers: record.headers,
        });
      }
      reader.finish();
      if (lastOffset >= nextPosition) nextPosition = lastOffset + 1n;
    }
    return { messages, nextPosition };
  }

  /** Stream error 1. */
  private resetOutOfRange(
    state: PartitionState,
    fetched: FetchedPartition,
    cause: SpoolError,
  ): void {
    const outOfRange: OutOfRange = {
      offset: state.position!,
      logStartOffset: fetched.logStartOffset,
      highWatermark: fetched.highWatermark,
    };
    const policy = this.config.autoOffsetReset;
    if (policy === 'none') {
      throw clientError(
        ClientErrorCode.OffsetOutOfRange,
        `${outOfRangeMessage(state, outOfRange)}, and autoOffsetReset is none`,
        { cause },
      );
    }
    this.logger.info(
      {
        topic: state.topic,
        partition: state.partition,
        position: String(outOfRange.offset),
        logStartOffset: String(outOfRange.logStartOffset),
        highWatermark: String(outOfRange.highWatermark),
      },
      `position out of range, resetting to ${policy}`,
    );
    state.position = undefined;
    state.outOfRange = outOfRange;
    state.resetPolicy = policy;
    state.epoch += 1;
    this.requestRestart();
  }

  /**
   * `streamGatewayIndex`: the gateway whose stream failed, if the stream itself did; a
   * partition's error is the gateway's answer, and says nothing against the gateway.
   */
  private retryOrFail(error: SpoolError, streamGatewayIndex?: number): void {
    this.failuresInARow += 1;
    if (!error.retriable || this.failuresInARow > this.config.retries) throw error;
    // A gateway that cannot be reached (killed, gone): the next stream opens on the next one in
    // `brokers`, as the next unary call would.
    if (error.code === CommonErrorCode.Unavailable && streamGatewayIndex !== undefined) {
      this.connection.failOver(error, streamGatewayIndex);
    }
    this.restartDelayMs = backoffMs(this.failuresInARow, {
      backoffInitialMs: this.config.retryBackoffMs,
      backoffMaxMs: this.config.retryBackoffMaxMs,
    });
    this.logger.warn(
      {
        code: error.code,
        attempt: this.failuresInARow,
        backoffMs: this.restartDelayMs,
        reason: error.message,
      },
      'consume stream failed, opening a new one',
    );
    this.requestRestart();
  }

  private requestRestart(): void {
    this.restartNeeded = true;
    this.wakeSleeper?.();
    this.events.push({ kind: 'wakeup' });
  }

  /** Closes the stream, resolves missing positions, and opens a stream for what is active. */
  private async restart(): Promise<void> {
    this.restartNeeded = false;
    this.closeStream();
    this.pending.length = 0;
    if (this.restartDelayMs > 0) {
      const delayMs = this.restartDelayMs;
      this.restartDelayMs = 0;
      await this.sleepUnlessWoken(delayMs);
      if (this.stopped) return;
    }
    await this.resolveMissingPositions();
    if (this.stopped || this.restartNeeded) return;
    const active = [...this.states.values()].filter((state) => !state.paused && !state.held);
    if (active.length === 0) return;
    for (const state of active) state.fetchPosition = state.position!;
    // Two pushes per partition: the gateway fetches the next while the application handles the
    // last (Kafka's consumer likewise sends its next fetch while the last one's records wait in
    // its buffer). With one, fetching and handling took turns: a third less throughput.
    const windowBytes = Math.min(
      this.config.maxBytes,
      pushesPerPartitionInWindow * this.config.maxBytesPerPartition * active.length,
    );
    this.generation += 1;
    this.stream = new ConsumeStream(
      this.connection,
      this.generation,
      active.map((state) => ({
        topic: state.topic,
        partition: state.partition,
        fetchOffset: state.position!,
        partitionMaxBytes: this.config.maxBytesPerPartition,
      })),
      windowBytes,
      (event) => this.events.push(event),
    );
  }

  private async resolveMissingPositions(): Promise<void> {
    const missing = [...this.states.values()].filter(
      (state) => !state.paused && !state.held && state.position === undefined,
    );
    const none = missing.find((state) => state.resetPolicy === 'none');
    if (none !== undefined) {
      throw clientError(
        ClientErrorCode.NoOffsetForPartition,
        `${partitionName(none.topic, none.partition)} has no position and autoOffsetReset is none`,
      );
    }
    const epochs = new Map(missing.map((state) => [state, state.epoch]));
    const offsets = await listOffsets(
      this.connection,
      missing.map((state) => ({
        topic: state.topic,
        partition: state.partition,
        spec:
          state.resetPolicy === 'earliest'
            ? OffsetSpec.OFFSET_SPEC_EARLIEST
            : OffsetSpec.OFFSET_SPEC_LATEST,
      })),
      {
        deadlineMs: this.config.requestTimeoutMs,
        attempts: this.config.retries + 1,
        backoffInitialMs: this.config.retryBackoffMs,
        backoffMaxMs: this.config.retryBackoffMaxMs,
      },
    );
    offsets.forEach((listed, index) => {
      const state = missing[index]!;
      // A seek while ListOffsets was in flight wins over the reset.
      if (state.epoch === epochs.get(state) && state.position === undefined) {
        state.position = listed.offset;
        const outOfRange = state.outOfRange;
        state.outOfRange = undefined;
        if (outOfRange !== undefined && state.resetPolicy !== 'none') {
          this.onOffsetReset({
            topic: state.topic,
            partition: state.partition,
            ...outOfRange,
            policy: state.resetPolicy,
            resetTo: listed.offset,
          });
        }
      }
    });
  }

  /** A backoff that a seek, pause, resume, assignment or stop cuts short. */
  private sleepUnlessWoken(durationMs: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.wakeSleeper = undefined;
        resolve();
      };
      const timer = setTimeout(wake, durationMs);
      this.wakeSleeper = wake;
    });
  }

  private closeStream(): void {
    this.stream?.close();
    this.stream = undefined;
    this.generation += 1;
  }

  /** Credit of a stream that is closed by now is gone with it; only the open one gets it. */
  private releaseCredit(creditBytes: number, generation: number): void {
    if (this.stream !== undefined && generation === this.stream.generation) {
      this.stream.grant(creditBytes);
    }
  }

  private stateOf(topic: string, partition: number, operation: string): PartitionState {
    const state = this.states.get(keyOf(topic, partition));
    if (state === undefined) {
      throw clientError(
        ClientErrorCode.InvalidRequest,
        `cannot ${operation} ${partitionName(topic, partition)}: the consumer is not assigned it`,
      );
    }
    return state;
  }
}

/** `orders[0]: offset 1000 is out of range: valid offsets are 0 to 42 (...)`. */
export function outOfRangeMessage(
  partition: { readonly topic: string; readonly partition: number },
  outOfRange: OutOfRange,
): string {
  const { offset, logStartOffset, highWatermark } = outOfRange;
  const range =
    logStartOffset < 0n || highWatermark < 0n
      ? 'the leader did not say which offsets are valid'
      : `valid offsets are ${logStartOffset} to ${highWatermark} (the log start offset to the ` +
        'high watermark)';
  return `${partitionName(partition.topic, partition.partition)}: offset ${offset} is out of range: ${range}`;
}

function keyOf(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

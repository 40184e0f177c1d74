import { SpoolError, type Logger } from '@spool/common';
import { incrementSequence } from '@spool/record-batch';
import type { ProducerConfig } from './config';
import { ClientErrorCode, fromProtoError, partitionName, toSpoolError } from './errors';
import type { GatewayConnection } from './gateway-connection';
import type { ProducerBatch } from './producer-batch';

/**
 * The idempotent producer's state (the idempotent part of Kafka's TransactionManager): a
 * producer id and epoch from InitProducerId (through the gateway, before the first send), and
 * per partition the next sequence. A batch is stamped with id, epoch and base sequence when it
 * is first sent, and every retry sends the same bytes, so the leader recognises a retry of a
 * batch it already wrote and answers it with the original offsets instead of writing it twice.
 *
 * How each answer about a stamped batch is handled:
 *
 *   1. Success: the partition's last acknowledged sequence moves to the batch's last one.
 *   2. OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID for a batch that is not the next
 *      after the last acknowledged one: an earlier batch is still being retried (perhaps the
 *      producer's first, so the leader does not know the producer yet); this one is retried
 *      after it (batches go back to their queue in sequence order), as Kafka's canRetry does.
 *   3. OUT_OF_ORDER_SEQUENCE_NUMBER for the next batch: the leader lost records it had
 *      acknowledged (a gap). The batch fails with that error and the epoch is bumped.
 *   4. UNKNOWN_PRODUCER_ID for the next batch (the leader forgot the producer: expired, or its
 *      records deleted) and INVALID_PRODUCER_EPOCH (a newer epoch of this id fenced it): the
 *      epoch is bumped. A batch that was never possibly written is sent again under the new
 *      epoch; one whose earlier attempt may have been written fails, because a duplicate can no
 *      longer be ruled out.
 *   5. Any other error: retried if retriable with retries left (same bytes), else the batch
 *      fails, and the epoch is bumped, because its sequences are now a hole the partition's
 *      later batches cannot continue past.
 *
 * An epoch bump (Kafka's bumpIdempotentEpochAndResetIdIfNeeded) waits until no batch is in
 * flight, asks InitProducerId with the current id and epoch (the coordinator answers epoch + 1,
 * or a new id past epoch 32767), resets every partition's sequences to 0, and then treats each
 * queued batch that was already stamped: never possibly written → stamped again when next sent;
 * possibly written → fails with a clear error. Nothing is sent while the producer has no id or
 * a bump is pending.
 */

/** Answers after which the batch was certainly not written by that attempt. */
const definiteRefusalCodes: ReadonlySet<string> = new Set([
  'OUT_OF_ORDER_SEQUENCE_NUMBER',
  'UNKNOWN_PRODUCER_ID',
  'INVALID_PRODUCER_EPOCH',
  'NOT_ENOUGH_REPLICAS',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'INVALID_RECORD',
  'CORRUPT_MESSAGE',
  'MESSAGE_TOO_LARGE',
  'RECORD_BATCH_TOO_LARGE',
]);

const producerEpochMax = 0x7fff;

interface PartitionSequences {
  nextSequence: number;
  lastAckedSequence: number;
  /** Counts stamps, so retries can be put back in the order they were stamped. */
  nextOrder: number;
}

export type IdempotentErrorOutcome =
  | { readonly kind: 'retry' }
  | { readonly kind: 'restamp' }
  | { readonly kind: 'fail'; readonly error: SpoolError };

export interface ProducerIdAndEpoch {
  readonly producerId: bigint;
  readonly producerEpoch: number;
}

export class IdempotenceManager {
  private current: ProducerIdAndEpoch | undefined;
  private bumpReason: string | undefined;
  private initializing: Promise<void> | undefined;
  private readonly partitions = new Map<string, PartitionSequences>();

  constructor(
    private readonly config: ProducerConfig,
    private readonly connection: GatewayConnection,
    private readonly logger: Logger,
  ) {}

  get producerIdAndEpoch(): ProducerIdAndEpoch | undefined {
    return this.current;
  }

  /** Whether batches may be stamped and sent now. */
  get isReady(): boolean {
    return (
      this.current !== undefined && this.bumpReason === undefined && this.initializing === undefined
    );
  }

  /**
   * Runs InitProducerId when the producer has no id, or a bump is due and nothing is in
   * flight. `onDone` gets the error when it failed for good (after the producer's retries).
   */
  maybeInitialize(inFlightCount: number, onDone: (error: SpoolError | undefined) => void): void {
    if (this.initializing !== undefined || this.isReady) return;
    if (this.bumpReason !== undefined && inFlightCount > 0) return;
    const previous = this.bumpReason === undefined ? undefined : this.current;
    const request =
      previous === undefined
        ? { producerId: -1n, producerEpoch: -1 }
        : { producerId: previous.producerId, producerEpoch: previous.producerEpoch };
    let attempts = 1;
    // Batches wait for the id at most their delivery timeout; so does the asking.
    const giveUpAtMs = Date.now() + this.config.deliveryTimeoutMs;
    this.initializing = this.connection
      .call((client) => client.initProducerId, request, {
        deadlineMs: this.config.requestTimeoutMs,
        attempts: this.config.retries + 1,
        backoffInitialMs: this.config.retryBackoffMs,
        backoffMaxMs: this.config.retryBackoffMaxMs,
        giveUpAtMs,
        onRetry: () => (attempts += 1),
        // No coordinator to ask yet (one starting or moving) comes as an answer, retriably.
        answerErrorOf: (response) =>
          response.error === undefined || response.error.code === ''
            ? undefined
            : fromProtoError(response.error, 'InitProducerId'),
      })
      .then(
        (response) => {
          if (
            response.producerId < 0n ||
            !Number.isInteger(response.producerEpoch) ||
            response.producerEpoch < 0 ||
            response.producerEpoch > producerEpochMax
          ) {
            throw new SpoolError(
              ClientErrorCode.Unknown,
              `InitProducerId answered producer id ${response.producerId} epoch ` +
                `${response.producerEpoch}, which no batch can carry`,
            );
          }
          this.logger.info(
            {
              producerId: String(response.producerId),
              producerEpoch: response.producerEpoch,
              reason: this.bumpReason ?? 'first send',
            },
            previous === undefined ? 'producer id assigned' : 'producer epoch bumped',
          );
          this.current = { producerId: response.producerId, producerEpoch: response.producerEpoch };
          this.bumpReason = undefined;
          this.partitions.clear();
          return undefined;
        },
        (error: unknown) => error,
      )
      .catch((error: unknown) => error)
      .then((error) => {
        this.initializing = undefined;
        if (error === undefined) return onDone(undefined);
        const cause = toSpoolError(error);
        onDone(
          new SpoolError(
            cause.code,
            `InitProducerId, which an idempotent producer needs before it sends, failed after ` +
              `${attempts} attempts: ${cause.message}`,
            { retriable: cause.retriable, cause },
          ),
        );
      });
  }

  /** Stamps a batch on its first send; a retry keeps its stamp. Only while isReady. */
  stamp(batch: ProducerBatch): void {
    if (batch.baseSequence >= 0) return;
    const current = this.current!;
    const sequences = this.sequencesOf(batch);
    batch.stamp(
      current.producerId,
      current.producerEpoch,
      sequences.nextSequence,
      sequences.nextOrder++,
    );
    sequences.nextSequence = incrementSequence(sequences.nextSequence, batch.recordCount);
  }

  /** Case 1. */
  onAcknowledged(batch: ProducerBatch): void {
    if (batch.baseSequence < 0 || !this.isCurrent(batch)) return;
    this.sequencesOf(batch).lastAckedSequence = incrementSequence(
      batch.baseSequence,
      batch.recordCount - 1,
    );
  }

  /** Cases 2-5 for a stamped batch; `retriesLeft` is the producer's retry budget. */
  onError(batch: ProducerBatch, error: SpoolError, retriesLeft: boolean): IdempotentErrorOutcome {
    const subject = partitionName(batch.topic, batch.partition);
    if (!definiteRefusalCodes.has(error.code)) batch.possiblyWritten = true;
    const sequences = this.sequencesOf(batch);
    if (error.code === 'OUT_OF_ORDER_SEQUENCE_NUMBER') {
      const next = incrementSequence(sequences.lastAckedSequence, 1);
      // 2.
      if (batch.baseSequence !== next && retriesLeft) return { kind: 'retry' };
      // 3.
      this.requestEpochBump(`${subject}: ${error.message}`);
      return {
        kind: 'fail',
        error: new SpoolError(
          error.code,
          `${error.message}; the partition lost records this producer had written before ` +
            `sequence ${batch.baseSequence}, so the producer bumps its epoch`,
          { retriable: false, cause: error },
        ),
      };
    }
    if (error.code === 'UNKNOWN_PRODUCER_ID') {
      const next = incrementSequence(sequences.lastAckedSequence, 1);
      // 2: the producer's earlier batch (its first, maybe) has not landed yet.
      if (batch.baseSequence !== next && retriesLeft) return { kind: 'retry' };
    }
    if (error.code === 'UNKNOWN_PRODUCER_ID' || error.code === 'INVALID_PRODUCER_EPOCH') {
      // 4.
      this.requestEpochBump(`${subject}: ${error.code}`);
      if (!batch.possiblyWritten)
        return retriesLeft ? { kind: 'restamp' } : { kind: 'fail', error };
      return { kind: 'fail', error: this.ambiguityError(batch, error) };
    }
    // 5.
    if (error.retriable && retriesLeft) return { kind: 'retry' };
    this.requestEpochBump(`${subject}: a batch failed with ${error.code}`);
    return { kind: 'fail', error };
  }

  /**
   * After a bump: the fate of a queued batch stamped under the old epoch. Returns the error to
   * fail it with, or undefined when it was cleared to be stamped again.
   */
  onEpochBumped(batch: ProducerBatch, cause: string): SpoolError | undefined {
    if (batch.baseSequence < 0 || this.isCurrent(batch)) return undefined;
    if (batch.possiblyWritten) {
      return this.ambiguityError(
        batch,
        new SpoolError('OUT_OF_ORDER_SEQUENCE_NUMBER', `the producer bumped its epoch (${cause})`),
      );
    }
    batch.stamp(-1n, -1, -1, Number.POSITIVE_INFINITY);
    return undefined;
  }

  private ambiguityError(batch: ProducerBatch, error: SpoolError): SpoolError {
    return new SpoolError(
      error.code,
      `${partitionName(batch.topic, batch.partition)}: ${error.message}; an earlier attempt of ` +
        'this batch may have been written, and after the epoch bump a retry could write it ' +
        'twice, so it is not retried: its records may or may not be in the log',
      { retriable: false, cause: error },
    );
  }

  private requestEpochBump(reason: string): void {
    if (this.bumpReason !== undefined) return;
    this.bumpReason = reason;
    this.logger.warn({ reason }, 'idempotent producer will bump its epoch');
  }

  private isCurrent(batch: ProducerBatch): boolean {
    return (
      this.current !== undefined &&
      batch.producerId === this.current.producerId &&
      batch.producerEpoch === this.current.producerEpoch
    );
  }

  private sequencesOf(batch: ProducerBatch): PartitionSequences {
    const key = `${batch.topic}\u0000${batch.partition}`;
    let sequences = this.partitions.get(key);
    if (sequences === undefined) {
      sequences = { nextSequence: 0, lastAckedSequence: -1, nextOrder: 0 };
      this.partitions.set(key, sequences);
    }
    return sequences;
  }
}

/**
 * Kafka's RPCProducerIdManager with the idempotent part of InitProducerId: hands producer ids to
 * idempotent producers from blocks the controller reserves (AllocateProducerIds), so ids are
 * unique cluster-wide without a store write per producer.
 *
 *   1. A new producer (producer_id -1, Kafka's NO_PRODUCER_ID) gets the next id of the current
 *      block at epoch 0.
 *   2. A producer that restarts, or must fence its own older requests after a sequence error,
 *      sends its id and epoch: it gets the same id at epoch + 1 (the leaders then accept a
 *      batch of that epoch only from sequence 0, and refuse the old epoch).
 *   3. When the epoch would pass 32767 (int16), it gets a new id at epoch 0, as Kafka does.
 *
 * Blocks: once 90% of the current block is handed out, the next one is fetched in the
 * background (Kafka's prefetch), so a busy coordinator never waits on the controller between
 * blocks. At most one fetch runs at a time; callers that find the block exhausted wait for it.
 * Ids are never handed out twice: a block is used once and dropped, and the controller never
 * reserves overlapping blocks (a restarted coordinator just gets a fresh block).
 *
 * The ids of a request are not validated against what was handed out: a coordinator keeps no
 * per-producer state (Kafka's idempotent producers have none either); fencing happens on the
 * partition leaders, which know each producer's epoch.
 */
import { CommonErrorCode, SpoolError } from '@spool/common';
import type { InitProducerIdRequest, InitProducerIdResponse } from '@spool/protocol';

/** Kafka's RecordBatch.NO_PRODUCER_ID: the request asks for a new producer id. */
export const noProducerId = -1n;
/** Producer epochs are int16 in every batch header. */
export const producerEpochMax = 0x7fff;
/** Producer ids are int64. */
const producerIdMax = 2n ** 63n - 1n;
/** Kafka's producer id block prefetch threshold: fetch the next block at 90% used. */
const prefetchThresholdRatio = 0.9;
/** How long a failed block fetch is not retried, so a down controller is not hammered. */
const blockFetchRetryBackoffMs = 100;

export interface ProducerIdBlock {
  readonly firstProducerId: bigint;
  readonly count: number;
}

export interface ProducerIdManagerOptions {
  /** Reserves the next block (the controller's AllocateProducerIds). */
  allocateBlock(): Promise<ProducerIdBlock>;
}

interface ActiveBlock {
  next: bigint;
  readonly end: bigint;
  readonly prefetchAt: bigint;
}

export class ProducerIdManager {
  private current: ActiveBlock | undefined;
  private prefetched: ActiveBlock | undefined;
  private fetching: Promise<void> | undefined;
  private lastFetchError: { error: unknown; atMs: number } | undefined;

  constructor(private readonly options: ProducerIdManagerOptions) {}

  async initProducerId(request: InitProducerIdRequest): Promise<InitProducerIdResponse> {
    if (request.producerId === noProducerId) {
      return { error: undefined, producerId: await this.nextProducerId(), producerEpoch: 0 };
    }
    if (request.producerId < 0n) {
      throw invalidRequest(
        `producer_id is ${request.producerId}; it must be -1 (a new producer) or an id to bump`,
      );
    }
    if (
      !Number.isInteger(request.producerEpoch) ||
      request.producerEpoch < 0 ||
      request.producerEpoch > producerEpochMax
    ) {
      throw invalidRequest(
        `producer_epoch is ${request.producerEpoch}; with producer_id ${request.producerId} it ` +
          `must be the producer's current epoch, 0 to ${producerEpochMax}`,
      );
    }
    if (request.producerEpoch === producerEpochMax) {
      return { error: undefined, producerId: await this.nextProducerId(), producerEpoch: 0 };
    }
    return {
      error: undefined,
      producerId: request.producerId,
      producerEpoch: request.producerEpoch + 1,
    };
  }

  /** The next unused id, waiting for a block only when none is left. */
  private async nextProducerId(): Promise<bigint> {
    for (;;) {
      const block = this.current;
      if (block !== undefined && block.next < block.end) {
        const producerId = block.next;
        block.next += 1n;
        if (block.next >= block.prefetchAt) this.startFetch();
        return producerId;
      }
      if (this.prefetched !== undefined) {
        this.current = this.prefetched;
        this.prefetched = undefined;
        continue;
      }
      this.startFetch();
      if (this.fetching === undefined) {
        throw new SpoolError(
          'COORDINATOR_LOAD_IN_PROGRESS',
          `no producer id block is available: the last request for one failed: ${String(
            (this.lastFetchError?.error as Error | undefined)?.message ??
              this.lastFetchError?.error,
          )}`,
          { retriable: true, cause: this.lastFetchError?.error },
        );
      }
      await this.fetching;
    }
  }

  /** Starts fetching the next block unless one is fetched, waiting, or failed a moment ago. */
  private startFetch(): void {
    if (this.fetching !== undefined || this.prefetched !== undefined) return;
    if (
      this.lastFetchError !== undefined &&
      Date.now() - this.lastFetchError.atMs < blockFetchRetryBackoffMs
    ) {
      return;
    }
    this.fetching = this.options
      .allocateBlock()
      .then((block) => {
        this.prefetched = activeBlock(block);
        this.lastFetchError = undefined;
      })
      .catch((error: unknown) => {
        this.lastFetchError = { error, atMs: Date.now() };
      })
      .finally(() => {
        this.fetching = undefined;
      });
  }
}

function activeBlock(block: ProducerIdBlock): ActiveBlock {
  if (!Number.isSafeInteger(block.count) || block.count <= 0) {
    throw new SpoolError(
      CommonErrorCode.Unknown,
      `the controller answered a producer id block of ${block.count} ids`,
    );
  }
  const end = block.firstProducerId + BigInt(block.count);
  if (block.firstProducerId < 0n || end - 1n > producerIdMax) {
    throw new SpoolError(
      CommonErrorCode.Unknown,
      `the controller answered a producer id block outside 0..2^63-1, from ${block.firstProducerId}`,
    );
  }
  const prefetchAfterCount = BigInt(Math.floor(block.count * prefetchThresholdRatio));
  return {
    next: block.firstProducerId,
    end,
    prefetchAt: block.firstProducerId + prefetchAfterCount,
  };
}

function invalidRequest(message: string): SpoolError {
  return new SpoolError(CommonErrorCode.InvalidRequest, message);
}

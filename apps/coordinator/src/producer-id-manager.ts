/**
 * Producer ids for idempotent producers, handed out from blocks the controller reserves
 * (AllocateProducerIds), so ids are unique cluster-wide and across restarts.
 *
 * A minimal version with the interface the `idempotence` branch defines; that branch owns this
 * file and its version (prefetch, epoch overflow) replaces this one when merged.
 */
import type { InitProducerIdRequest, InitProducerIdResponse } from '@spool/protocol';
import { CoordinatorError } from './coordinator-errors';

/** Kafka's RecordBatch.NO_PRODUCER_ID: the request asks for a new producer id. */
export const noProducerId = -1n;
/** Producer epochs are int16 in every batch header. */
export const producerEpochMax = 0x7fff;

export interface ProducerIdBlock {
  readonly firstProducerId: bigint;
  readonly count: number;
}

export interface ProducerIdManagerOptions {
  /** Reserves the next block (the controller's AllocateProducerIds). */
  allocateBlock(): Promise<ProducerIdBlock>;
}

export class ProducerIdManager {
  private next = 0n;
  private end = 0n;
  /** One block request at a time; concurrent callers wait for it. */
  private fetching: Promise<void> | undefined;

  constructor(private readonly options: ProducerIdManagerOptions) {}

  async initProducerId(request: InitProducerIdRequest): Promise<InitProducerIdResponse> {
    if (request.producerId !== noProducerId && request.producerId >= 0n) {
      if (request.producerEpoch < 0 || request.producerEpoch >= producerEpochMax) {
        return { error: undefined, producerId: await this.nextProducerId(), producerEpoch: 0 };
      }
      return {
        error: undefined,
        producerId: request.producerId,
        producerEpoch: request.producerEpoch + 1,
      };
    }
    return { error: undefined, producerId: await this.nextProducerId(), producerEpoch: 0 };
  }

  private async nextProducerId(): Promise<bigint> {
    while (this.next >= this.end) {
      this.fetching ??= this.options
        .allocateBlock()
        .then((block) => {
          if (block.count <= 0) {
            throw new CoordinatorError(
              'COORDINATOR_NOT_AVAILABLE',
              `the controller returned an empty producer id block (count ${block.count})`,
            );
          }
          this.next = block.firstProducerId;
          this.end = block.firstProducerId + BigInt(block.count);
        })
        .finally(() => (this.fetching = undefined));
      await this.fetching;
    }
    return this.next++;
  }
}

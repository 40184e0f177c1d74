/**
 * Producer id blocks (Kafka's AllocateProducerIds, KIP-730): coordinators hand out producer ids
 * to idempotent producers from blocks the active controller reserves here. The counter lives in
 * the metadata store under `/spool/<cluster>/producer-ids`; each allocation moves it forward by
 * one block in a transaction that compares the key's last revision (and the controller's
 * election guard, through the writer), so two allocations can never return overlapping blocks:
 * not two concurrent calls, not a deposed controller, not a controller that restarted.
 */
import type { ControllerContext } from './controller-context';
import { SpoolError } from '@spool/common';
import { encodeRecord } from './metadata-records';

/** Ids per block: Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE. */
export const producerIdsPerBlock = 1000;

/** Producer ids are int64 on the wire and in every batch header. */
const producerIdMax = 2n ** 63n - 1n;

export interface ProducerIdBlock {
  readonly firstProducerId: bigint;
  readonly count: number;
}

/** Reserves the next block for `coordinatorId`; call it on the controller's command queue. */
export async function allocateProducerIdBlock(
  context: ControllerContext,
  coordinatorId: string,
): Promise<ProducerIdBlock> {
  if (coordinatorId === '') {
    throw new SpoolError('INVALID_REQUEST', 'coordinator_id must name the coordinator');
  }
  const current = context.state.producerIds;
  const firstProducerId = current?.nextProducerId ?? 0n;
  const nextProducerId = firstProducerId + BigInt(producerIdsPerBlock);
  if (nextProducerId - 1n > producerIdMax) {
    throw new SpoolError(
      'UNKNOWN_SERVER_ERROR',
      `every producer id up to ${producerIdMax} has been handed out`,
    );
  }
  const key = context.writer.metadataKeys.producerIds();
  await context.writer.commit(
    [context.writer.unchangedSince(key, current?.modRevision)],
    [
      {
        kind: 'put',
        key,
        value: encodeRecord({
          nextProducerId: nextProducerId.toString(),
          lastBlockAssignedTo: coordinatorId,
        }),
      },
    ],
  );
  context.logger.info(
    { coordinatorId, firstProducerId: firstProducerId.toString(), count: producerIdsPerBlock },
    'producer id block allocated',
  );
  return { firstProducerId, count: producerIdsPerBlock };
}

/**
 * Where a coordinator's ProducerIdManager gets its blocks: AllocateProducerIds on the active
 * controller, found and followed through a LeaderChannel (NOT_CONTROLLER answers name the
 * active one), so a controller failover costs a redirect, not an error.
 */
import { callOnce, SpoolError, type LeaderChannel } from '@spool/common';
import type { ControllerServiceClient } from '@spool/protocol';
import type { ProducerIdBlock } from './producer-id-manager';

/** One block request gets this long per attempt. */
const allocateDeadlineMs = 5_000;

/** `allocateBlock` for a ProducerIdManager, naming this coordinator in the controller's log. */
export function controllerProducerIdBlocks(
  channel: LeaderChannel<ControllerServiceClient>,
  coordinatorId: string,
): () => Promise<ProducerIdBlock> {
  return async () => {
    const response = await channel.call((client) =>
      callOnce(
        client,
        client.allocateProducerIds,
        { coordinatorId },
        {
          deadlineMs: allocateDeadlineMs,
        },
      ),
    );
    if (response.error !== undefined) {
      throw new SpoolError(
        'COORDINATOR_NOT_AVAILABLE',
        `the controller could not allocate producer ids: ${response.error.message}`,
      );
    }
    return { firstProducerId: response.firstProducerId, count: response.count };
  };
}

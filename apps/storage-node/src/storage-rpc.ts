/**
 * The storage node's gRPC API: Append (produce into partitions this node leads), ListOffsets and
 * DeleteRecords, and BeginControllerEpoch (a new active controller announcing itself). Each partition is answered on its own with Kafka's error name; a partition whose
 * batches fail validation writes none of them (the segment store validates every batch first, and
 * the producer state checks every idempotent batch's epoch and sequence before that).
 * The gRPC server counts and times every call and counts the partition errors in its answer;
 * Append also reports where its time went (queue, local append, replication wait).
 *
 * Append is where a produced batch's bytes and the request's acks are checked, and the only
 * place: the gateway forwards both unread (produce-handler.ts says why), as Kafka checks them in
 * the broker that writes the bytes. acks is checked once per request, before any partition, as
 * Kafka's ReplicaManager.appendRecords does; the batches once per partition, by the log
 * (Log.validateAppend), right before they are written.
 */
import type { ControllerLink } from './controller-link';
import type { ReplicaManager } from './replica/replica-manager';
import type { StorageMetrics } from './storage-metrics';
import { appendHandler } from './storage-rpc/append-handler';
import { beginControllerEpochHandler } from './storage-rpc/begin-controller-epoch-handler';
import { deleteRecordsHandler } from './storage-rpc/delete-records-handler';
import { listOffsetsHandler } from './storage-rpc/list-offsets-handler';

export { protoError } from './storage-rpc/proto-error';

/**
 * The storage service's handlers, one per RPC (storage-rpc/). `beforeLogAppend` is the slow-disk
 * test hook's (given only when the fault suite turns it on, see slow-disk-test-hook.ts).
 */
export function storageHandlers(
  replicas: () => ReplicaManager,
  topicConfig: (topic: string, name: string) => string | undefined,
  metrics: StorageMetrics,
  controller: { readonly brokerId: number; readonly link: () => ControllerLink | undefined },
  beforeLogAppend?: () => void,
) {
  return {
    append: appendHandler({ replicas, topicConfig, metrics, beforeLogAppend }),
    listOffsets: listOffsetsHandler(replicas),
    deleteRecords: deleteRecordsHandler(replicas),
    beginControllerEpoch: beginControllerEpochHandler(controller.brokerId, controller.link),
  };
}

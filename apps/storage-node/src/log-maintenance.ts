import type { Logger } from '@spool/common';
import type { ReplicaManager } from './replica/replica-manager';

/** How often high watermarks are checkpointed (Kafka's replica.high.watermark.checkpoint.interval.ms). */
export const highWatermarkCheckpointIntervalMs = 5_000;

/**
 * The storage node's periodic log work (Kafka's LogManager and ReplicaManager schedulers):
 * retention every `retentionCheckIntervalMs`, the high-watermark checkpoint every 5 s, and
 * forgetting idle producer ids. Returns the function that stops all three.
 */
export function startLogMaintenance(
  replicas: ReplicaManager,
  options: {
    retentionCheckIntervalMs: number;
    producerIdExpirationCheckIntervalMs: number;
    logger: Logger;
  },
): () => void {
  const { logger } = options;
  const retentionTimer = setInterval(() => {
    for (const replica of replicas.all()) {
      try {
        const deleted = replica.log.deleteRetainedSegments();
        if (deleted.segmentsDeleted > 0) {
          logger.info({ partition: replica.name, ...deleted }, 'retention deleted segments');
        }
      } catch (error) {
        logger.warn({ err: error, partition: replica.name }, 'retention failed');
      }
    }
  }, options.retentionCheckIntervalMs);
  const checkpointTimer = setInterval(
    () => replicas.checkpointHighWatermarks(),
    highWatermarkCheckpointIntervalMs,
  );
  const producerExpirationTimer = setInterval(
    () => replicas.removeExpiredProducers(),
    options.producerIdExpirationCheckIntervalMs,
  );
  for (const timer of [retentionTimer, checkpointTimer, producerExpirationTimer]) timer.unref();
  return () => {
    clearInterval(retentionTimer);
    clearInterval(checkpointTimer);
    clearInterval(producerExpirationTimer);
  };
}

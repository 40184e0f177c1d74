/**
 * Readiness after a start: a storage node reports ready only once the controller lists it as an
 * unfenced (ALIVE) broker, so tooling that waits for readiness can place replicas on it, and
 * once each replica it hosts is back
 * in its partition's ISR (or leads it), so a rolling restart on Kubernetes never takes a second
 * replica of a partition down while the first is still catching up. Partitions whose leader is
 * offline cannot take this node back and do not hold it; a bound keeps a stuck partition from
 * holding it forever.
 */
import { sleep, type Logger } from '@spool/common';
import type { ClusterMetadataCache } from '@spool/protocol';
import type { ReplicaManager } from './replica-manager';

const checkIntervalMs = 250;

export async function waitForReplicasInSync(
  replicas: ReplicaManager,
  brokerId: number,
  metadata: ClusterMetadataCache,
  timeoutMs: number,
  logger: Logger,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (metadata.brokers.get(brokerId)?.state !== 'ALIVE') {
    if (Date.now() >= deadline) {
      logger.warn({ brokerId }, 'ready although the controller does not list this broker as alive');
      return;
    }
    await sleep(checkIntervalMs);
  }
  for (;;) {
    const behind = [...replicas.all()].filter((replica) => {
      const partition = metadata.partition(replica.topic, replica.partition);
      if (partition === undefined || partition.leaderId < 0) return false;
      return !partition.isr.includes(brokerId);
    });
    if (behind.length === 0) return;
    if (Date.now() >= deadline) {
      logger.warn(
        { partitions: behind.map((replica) => replica.name) },
        'ready although some replicas are not in sync yet',
      );
      return;
    }
    await sleep(checkIntervalMs);
  }
}

/**
 * The gateway's link to the controllers is a ClusterLink (@spool/cluster-link): the admin calls
 * are forwarded through its channel to the active controller, every route is read from its
 * metadata cache, and callers that found the metadata stale (a leader said
 * NOT_LEADER_OR_FOLLOWER) wait on it, bounded, for a newer version. What is the gateway's own is
 * how hard one forwarded admin call tries.
 */
import { ClusterLink } from '@spool/cluster-link';
import type { Logger, TransportSecurity } from '@spool/common';

/** Attempts of one admin call over the controller addresses, NOT_CONTROLLER redirects included. */
const controllerCallAttemptsMax = 10;

export type MetadataLink = ClusterLink;

/** Partitions named in one 'metadata applied' line; a large change is counted, not listed. */
const loggedPartitionsMax = 10;

export function createMetadataLink(
  controllerAddresses: readonly string[],
  logger: Logger,
  transportSecurity?: TransportSecurity,
): MetadataLink {
  const link = new ClusterLink({
    controllerAddresses,
    controllerCallAttempts: controllerCallAttemptsMax,
    logger,
    transportSecurity,
  });
  logRouteChanges(link, logger);
  return link;
}

/**
 * One line per metadata delta that changes routes (partition leaders, brokers, coordinator
 * shards): when this gateway learned of an election is where propagation ends in the fault
 * suite's outage breakdown, and what an operator reads to see how far a gateway lags.
 */
function logRouteChanges(link: ClusterLink, logger: Logger): void {
  link.metadata.onChange((change) => {
    const routesChanged =
      change.changedTopics.length +
      change.changedPartitions.length +
      change.changedBrokers.length +
      change.deletedBrokers.length +
      change.changedShards.length;
    if (routesChanged === 0) return;
    logger.info(
      {
        metadataVersion: change.version.toString(),
        snapshot: change.snapshot,
        partitions: change.changedPartitions.length,
        leaders: change.changedPartitions
          .slice(0, loggedPartitionsMax)
          .map(
            (partition) =>
              `${partition.topic}-${partition.partition}:${partition.leaderId}@${partition.leaderEpoch}`,
          ),
        topics: change.changedTopics.length,
        brokers: change.changedBrokers.length + change.deletedBrokers.length,
        shards: change.changedShards,
      },
      'metadata applied',
    );
  });
}

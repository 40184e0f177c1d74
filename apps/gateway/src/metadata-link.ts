/**
 * The gateway's link to the controllers is a ClusterLink (@spool/cluster-link): the admin calls
 * are forwarded through its channel to the active controller, every route is read from its
 * metadata cache, and callers that found the metadata stale (a leader said
 * NOT_LEADER_OR_FOLLOWER) wait on it, bounded, for a newer version. What is the gateway's own is
 * how hard one forwarded admin call tries.
 */
import { ClusterLink } from '@spool/cluster-link';
import type { Logger } from '@spool/common';

/** Attempts of one admin call over the controller addresses, NOT_CONTROLLER redirects included. */
const controllerCallAttemptsMax = 10;

export type MetadataLink = ClusterLink;

export function createMetadataLink(
  controllerAddresses: readonly string[],
  logger: Logger,
): MetadataLink {
  return new ClusterLink({
    controllerAddresses,
    controllerCallAttempts: controllerCallAttemptsMax,
    logger,
  });
}

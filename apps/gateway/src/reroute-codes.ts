/**
 * Codes a leader answers for a partition when the request went to the wrong place or the leader
 * is changing: the gateway waits for newer metadata and sends that partition again (Kafka's
 * InvalidMetadataException family, plus a leader that cannot be reached at all).
 */
export const rerouteCodes: ReadonlySet<string> = new Set([
  'NOT_LEADER_OR_FOLLOWER',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'UNKNOWN_LEADER_EPOCH',
  'FENCED_LEADER_EPOCH',
  'NETWORK_EXCEPTION',
  'UNAVAILABLE',
  'SHUTTING_DOWN',
]);

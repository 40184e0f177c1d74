/**
 * The one catalog of the error codes Spool reports: every service, the SDK and the CLI name a
 * failure by one of these codes, and whether the same request may succeed if sent again
 * (`retriable`) is decided here, once, for the whole cluster.
 *
 * Two kinds of entry:
 * 1. Kafka's own errors (org.apache.kafka.common.protocol.Errors): the name, the numeric code on
 *    Kafka's wire, the default message, and `retriable` true exactly when Kafka's exception for
 *    it is a RetriableException (InvalidMetadataException, TimeoutException and their kin). A
 *    client that knows Kafka reads the same answer from Spool.
 * 2. Spool's own errors, for failures Kafka has no code for (a transport that is down, a
 *    metadata store, the SDK's local conditions). They have no Kafka code (`kafkaCode` is
 *    undefined); a Kafka listener sends them as UNKNOWN_SERVER_ERROR.
 *
 * To add a code: add an entry with its reason. Kafka's codes keep Kafka's number, name and
 * classification; a Spool code whose meaning Kafka has must use Kafka's instead.
 */
export interface ErrorDefinition {
  /** Kafka's numeric error code on its wire, or undefined for Spool's own errors. */
  readonly kafkaCode: number | undefined;
  /** Whether the same request may succeed if sent again, as Kafka classifies it. */
  readonly retriable: boolean;
  /** What the error means, for a message that has nothing more specific to say. */
  readonly message: string;
}

function kafka(kafkaCode: number, retriable: boolean, message: string): ErrorDefinition {
  return { kafkaCode, retriable, message };
}

function spool(retriable: boolean, message: string): ErrorDefinition {
  return { kafkaCode: undefined, retriable, message };
}

const definitions = {
  // Kafka's errors, in Kafka's order (its Errors enum).
  UNKNOWN_SERVER_ERROR: kafka(
    -1,
    false,
    'The server experienced an unexpected error when processing the request.',
  ),
  OFFSET_OUT_OF_RANGE: kafka(
    1,
    false,
    'The requested offset is not within the range of offsets maintained by the server.',
  ),
  // CorruptRecordException: bytes damaged on the way may arrive intact when sent again.
  CORRUPT_MESSAGE: kafka(
    2,
    true,
    'This message has failed its CRC checksum, exceeds the valid size, has a null key for a ' +
      'compacted topic, or is otherwise corrupt.',
  ),
  // InvalidMetadataException: the topic or partition may be about to appear.
  UNKNOWN_TOPIC_OR_PARTITION: kafka(3, true, 'This server does not host this topic-partition.'),
  LEADER_NOT_AVAILABLE: kafka(
    5,
    true,
    'There is no leader for this topic-partition as we are in the middle of a leadership election.',
  ),
  NOT_LEADER_OR_FOLLOWER: kafka(
    6,
    true,
    'For requests intended only for the leader, this error indicates that the broker is not the ' +
      'current leader. For requests intended for any replica, this error indicates that the ' +
      'broker is not a replica of the topic partition.',
  ),
  REQUEST_TIMED_OUT: kafka(7, true, 'The request timed out.'),
  MESSAGE_TOO_LARGE: kafka(
    10,
    false,
    'The request included a message larger than the max message size the server will accept.',
  ),
  OFFSET_METADATA_TOO_LARGE: kafka(
    12,
    false,
    'The metadata field of the offset request was too large.',
  ),
  NETWORK_EXCEPTION: kafka(13, true, 'The server disconnected before a response was received.'),
  COORDINATOR_LOAD_IN_PROGRESS: kafka(
    14,
    true,
    "The coordinator is loading and hence can't process requests.",
  ),
  COORDINATOR_NOT_AVAILABLE: kafka(15, true, 'The coordinator is not available.'),
  NOT_COORDINATOR: kafka(16, true, 'This is not the correct coordinator.'),
  INVALID_TOPIC_EXCEPTION: kafka(
    17,
    false,
    'The request attempted to perform an operation on an invalid topic.',
  ),
  RECORD_LIST_TOO_LARGE: kafka(
    18,
    false,
    'The request included message batch larger than the configured segment size on the server.',
  ),
  NOT_ENOUGH_REPLICAS: kafka(
    19,
    true,
    'Messages are rejected since there are fewer in-sync replicas than required.',
  ),
  NOT_ENOUGH_REPLICAS_AFTER_APPEND: kafka(
    20,
    true,
    'Messages are written to the log, but to fewer in-sync replicas than required.',
  ),
  INVALID_REQUIRED_ACKS: kafka(
    21,
    false,
    'Produce request specified an invalid value for required acks.',
  ),
  UNKNOWN_MEMBER_ID: kafka(25, false, 'The coordinator is not aware of this member.'),
  TOPIC_AUTHORIZATION_FAILED: kafka(29, false, 'Topic authorization failed.'),
  GROUP_AUTHORIZATION_FAILED: kafka(30, false, 'Group authorization failed.'),
  CLUSTER_AUTHORIZATION_FAILED: kafka(31, false, 'Cluster authorization failed.'),
  UNSUPPORTED_SASL_MECHANISM: kafka(
    33,
    false,
    'The broker does not support the requested SASL mechanism.',
  ),
  ILLEGAL_SASL_STATE: kafka(34, false, 'Request is not valid given the current SASL state.'),
  UNSUPPORTED_VERSION: kafka(35, false, 'The version of API is not supported.'),
  TOPIC_ALREADY_EXISTS: kafka(36, false, 'Topic with this name already exists.'),
  INVALID_PARTITIONS: kafka(37, false, 'Number of partitions is below 1.'),
  INVALID_REPLICATION_FACTOR: kafka(
    38,
    false,
    'Replication factor is below 1 or larger than the number of available brokers.',
  ),
  INVALID_REPLICA_ASSIGNMENT: kafka(39, false, 'Replica assignment is invalid.'),
  INVALID_CONFIG: kafka(40, false, 'Configuration is invalid.'),
  // NotControllerException: the active controller answers the same request.
  NOT_CONTROLLER: kafka(41, true, 'This is not the correct controller for this cluster.'),
  INVALID_REQUEST: kafka(
    42,
    false,
    'This most likely occurs because of a request being malformed by the client library or the ' +
      'message was sent to an incompatible broker. See the broker logs for more details.',
  ),
  OUT_OF_ORDER_SEQUENCE_NUMBER: kafka(
    45,
    false,
    'The broker received an out of order sequence number.',
  ),
  INVALID_PRODUCER_EPOCH: kafka(47, false, 'Producer attempted to produce with an old epoch.'),
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: kafka(
    53,
    false,
    'Transactional Id authorization failed.',
  ),
  SECURITY_DISABLED: kafka(54, false, 'Security features are disabled.'),
  // KafkaStorageException: another replica, or the same one after a restart, may serve it.
  KAFKA_STORAGE_ERROR: kafka(56, true, 'Disk error when trying to access log file on the disk.'),
  SASL_AUTHENTICATION_FAILED: kafka(58, false, 'SASL Authentication failed.'),
  UNKNOWN_PRODUCER_ID: kafka(
    59,
    false,
    'This exception is raised by the broker if it could not locate the producer metadata ' +
      'associated with the producerId in question.',
  ),
  NON_EMPTY_GROUP: kafka(68, false, 'The group is not empty.'),
  GROUP_ID_NOT_FOUND: kafka(69, false, 'The group id does not exist.'),
  FETCH_SESSION_ID_NOT_FOUND: kafka(70, true, 'The fetch session ID was not found.'),
  INVALID_FETCH_SESSION_EPOCH: kafka(71, true, 'The fetch session epoch is invalid.'),
  // FencedLeaderEpochException is an InvalidMetadataException: refresh the metadata, send again.
  FENCED_LEADER_EPOCH: kafka(
    74,
    true,
    'The leader epoch in the request is older than the epoch on the broker.',
  ),
  UNKNOWN_LEADER_EPOCH: kafka(
    75,
    true,
    'The leader epoch in the request is newer than the epoch on the broker.',
  ),
  UNSUPPORTED_COMPRESSION_TYPE: kafka(
    76,
    false,
    'The requesting client does not support the compression type of given partition.',
  ),
  STALE_BROKER_EPOCH: kafka(77, false, 'Broker epoch has changed.'),
  GROUP_MAX_SIZE_REACHED: kafka(81, false, 'The consumer group has reached its max size.'),
  INVALID_RECORD: kafka(
    87,
    false,
    'This record has failed the validation on broker and hence will be rejected.',
  ),
  NO_REASSIGNMENT_IN_PROGRESS: kafka(85, false, 'No partition reassignment is in progress.'),
  GROUP_SUBSCRIBED_TO_TOPIC: kafka(
    86,
    false,
    'Deleting offsets of a topic is forbidden while the consumer group is actively subscribed ' +
      'to it.',
  ),
  THROTTLING_QUOTA_EXCEEDED: kafka(89, true, 'The throttling quota has been exceeded.'),
  RESOURCE_NOT_FOUND: kafka(
    91,
    false,
    'A request illegally referred to a resource that does not exist.',
  ),
  DUPLICATE_RESOURCE: kafka(92, false, 'A request illegally referred to the same resource twice.'),
  UNACCEPTABLE_CREDENTIAL: kafka(
    93,
    false,
    'Requested credential would not meet criteria for acceptability.',
  ),
  INVALID_UPDATE_VERSION: kafka(95, false, 'The given update version was invalid.'),
  DUPLICATE_BROKER_REGISTRATION: kafka(101, false, 'This broker ID is already in use.'),
  BROKER_ID_NOT_REGISTERED: kafka(102, false, 'The given broker ID was not registered.'),
  INELIGIBLE_REPLICA: kafka(107, false, 'The new ISR contains at least one ineligible replica.'),
  FENCED_MEMBER_EPOCH: kafka(
    110,
    false,
    'The member epoch is fenced by the group coordinator. The member must abandon all its ' +
      'partitions and rejoin.',
  ),
  UNRELEASED_INSTANCE_ID: kafka(
    111,
    false,
    'The instance ID is still used by another member in the consumer group. That member must ' +
      'leave first.',
  ),
  UNSUPPORTED_ASSIGNOR: kafka(
    112,
    false,
    'The assignor or its version range is not supported by the consumer group.',
  ),
  STALE_MEMBER_EPOCH: kafka(
    113,
    false,
    'The member epoch is stale. The member must retry after receiving its updated member epoch ' +
      'via the ConsumerGroupHeartbeat API.',
  ),
  // A subscribed topic regex that RE2J, which Kafka 4 compiles it with, refuses.
  INVALID_REGULAR_EXPRESSION: kafka(128, false, 'The regular expression is not valid.'),

  // Spool's own errors of the runtime and the transport.
  // A peer could not be reached (gRPC UNAVAILABLE); another attempt may reach it or another one.
  UNAVAILABLE: spool(true, 'The service could not be reached.'),
  // The process answering is stopping; the client retries against the one that takes over.
  SHUTTING_DOWN: spool(true, 'The server is shutting down.'),
  // A listener could not bind its address at start-up (the port is taken, or not ours).
  LISTEN_FAILED: spool(false, 'The server could not listen on its address.'),
  // A TLS key, certificate or CA file is missing, unreadable, not PEM, or does not match.
  TLS_MATERIAL_INVALID: spool(false, 'A TLS key, certificate or CA file could not be used.'),
  // A data-port client already has its bound of requests in flight on its connection.
  IN_FLIGHT_REQUESTS_FULL: spool(
    true,
    'The connection already carries its maximum of requests in flight.',
  ),

  // Spool's own errors of the storage node and the segment store.
  // The data directory is held by another live process.
  DATA_DIRECTORY_LOCKED: spool(false, 'The data directory is held by another process.'),
  // The rack of this node could not be read from where it was configured to come from.
  RACK_LOOKUP_FAILED: spool(false, 'The rack of this node could not be looked up.'),
  // A segment file became shorter than a slice read from it; a new read sees the log as it is.
  FILE_TRUNCATED: spool(true, 'A segment file was truncated after a slice of it was read.'),
  // Too many transfers are waiting for one socket; the peer should wait for responses first.
  TRANSFER_QUEUE_FULL: spool(true, 'Too many transfers are waiting for one connection.'),
  // A follower's batches do not continue its log exactly; it must truncate or fetch again.
  UNEXPECTED_APPEND_OFFSET: spool(false, 'The batch does not continue the log at its end.'),
  // One append is larger than a whole segment (segment.bytes) could ever hold.
  RECORD_BATCH_TOO_LARGE: spool(false, 'The batch is larger than a segment can hold.'),

  // Spool's own errors of the metadata store.
  // etcd did not answer in time or no endpoint was reachable; the call may or may not have
  // taken effect (a write must be re-read before it is retried blindly).
  METADATA_STORE_UNAVAILABLE: spool(true, 'The metadata store could not be reached.'),
  // The store was closed by its owner; nothing on this instance will succeed again.
  METADATA_STORE_CLOSED: spool(false, 'The metadata store is closed.'),
  // The request breaks a rule of the store (duplicate key in a transaction, too many
  // operations, a value too large, a future revision); the same request fails again.
  METADATA_STORE_INVALID_REQUEST: spool(false, 'The metadata store refused the request.'),
  // A watch asked for revisions the store no longer remembers; re-read, then watch again.
  WATCH_COMPACTED: spool(false, 'The watched revisions were compacted away.'),
  // The lease ended (revoked, expired, or its owner closed); keys bound to it are gone.
  LEASE_LOST: spool(false, 'The lease ended.'),
  // Another live process holds the local store's file.
  METADATA_STORE_LOCKED: spool(false, 'The metadata store file is held by another process.'),
  // The local store's file holds bytes that pass their CRC but do not make sense, or its
  // header or snapshot is damaged; an operator must look at it.
  METADATA_STORE_CORRUPT: spool(false, 'The metadata store file is damaged.'),
  // Writing or syncing the local store's file failed; the process must reopen the store.
  METADATA_STORE_STORAGE_ERROR: spool(false, 'The metadata store file could not be written.'),
  // The caller's AbortSignal ended a campaign before it won.
  CAMPAIGN_ABORTED: spool(false, 'The leadership campaign was aborted.'),

  // Spool's own errors the SDK raises itself.
  // The producer's buffer stayed full for maxBlockMs. Kafka's BufferExhaustedException is a
  // TimeoutException: the buffer drains as batches land.
  BUFFER_EXHAUSTED: spool(true, "The producer's buffer stayed full for maxBlockMs."),
  // A partition has no position and the reset policy is `none` (Kafka's NoOffsetForPartition).
  NO_OFFSET_FOR_PARTITION: spool(false, 'The partition has no position to consume from.'),
  // A call on a producer, consumer or admin after its close.
  CLIENT_CLOSED: spool(false, 'The client is closed.'),
  // A feature the cluster does not offer yet.
  UNSUPPORTED_FEATURE: spool(false, 'The cluster does not offer this feature.'),
} as const satisfies Record<string, ErrorDefinition>;

/** A code of the catalog. */
export type ErrorCode = keyof typeof definitions;

export const errorCatalog: Readonly<Record<ErrorCode, ErrorDefinition>> = definitions;

const byKafkaCode: ReadonlyMap<number, ErrorCode> = new Map(
  (Object.keys(definitions) as ErrorCode[])
    .filter((code) => definitions[code].kafkaCode !== undefined)
    .map((code) => [definitions[code].kafkaCode as number, code]),
);

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(definitions, code);
}

/** The catalog's entry for `code`, or undefined for a code it does not know (a foreign peer's). */
export function errorDefinitionOf(code: string): ErrorDefinition | undefined {
  return isErrorCode(code) ? definitions[code] : undefined;
}

/**
 * Whether a request that failed with `code` may succeed if sent again. A code the catalog does not
 * know is retriable only if the peer that sent it said so (`retriableAsSent`, false by default).
 */
export function isRetriable(code: string, retriableAsSent = false): boolean {
  return errorDefinitionOf(code)?.retriable ?? retriableAsSent;
}

/**
 * Kafka's InvalidMetadataException family: the request went by a stale view of who leads the
 * partition (or could not reach the leader), so a client refreshes its metadata before it retries.
 */
const invalidMetadataCodes: ReadonlySet<string> = new Set<ErrorCode>([
  'NOT_LEADER_OR_FOLLOWER',
  'LEADER_NOT_AVAILABLE',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'FENCED_LEADER_EPOCH',
  'UNKNOWN_LEADER_EPOCH',
  'KAFKA_STORAGE_ERROR',
  'NETWORK_EXCEPTION',
]);

/** Whether `code` is of Kafka's InvalidMetadataException family (refresh, then retry). */
export function isInvalidMetadata(code: string): boolean {
  return invalidMetadataCodes.has(code);
}

/** The code for Kafka's numeric error code, or undefined for a number the catalog does not hold. */
export function errorCodeOfKafkaCode(kafkaCode: number): ErrorCode | undefined {
  return byKafkaCode.get(kafkaCode);
}

/**
 * What the controller stores under each metadata key, as JSON (readable with `etcdctl get`).
 * Offsets and epochs that can pass 2^53 are decimal strings; the rest are plain numbers.
 * Decoding checks the shape, so a hand-edited or foreign value is reported, not trusted.
 */
export interface EndpointRecord {
  readonly name: string;
  readonly host: string;
  readonly port: number;
}

export interface BrokerRecord {
  readonly brokerId: number;
  readonly rack: string;
  readonly endpoints: readonly EndpointRecord[];
  /** Random per process start: tells a restart from a second process claiming the same id. */
  readonly incarnationId: string;
  /**
   * The broker epoch, as a decimal string: one more than the metadata version the controller had
   * applied when it registered the broker, so each registration of an id has a larger epoch than
   * every earlier one, across controller failovers too.
   */
  readonly brokerEpoch: string;
  /** Fenced brokers lead nothing and are out of every ISR until they register again. */
  readonly fenced: boolean;
  /**
   * Set by controlled shutdown (Kafka's inControlledShutdown): the broker is stopping and a new
   * incarnation may take its id at once. Stored, not only kept in the controller's memory, so a
   * controller that starts after the broker stopped does not take the old registration for a
   * live process. Absent in records written before it existed, which reads as false.
   */
  readonly inControlledShutdown?: boolean;
  /**
   * Set by DecommissionBroker: no new replica is placed on the broker (its replicas move off by
   * reassignment), kept across registrations until cleared. Absent reads as false.
   */
  readonly decommissioned?: boolean;
  /**
   * The broker's dynamic configs (Kafka's BROKER config resource, broker-configs.ts), kept
   * across registrations like `decommissioned`. Absent reads as none.
   */
  readonly dynamicConfigs?: Readonly<Record<string, string>>;
}

/**
 * A topic's key is the commit point of every change to the topic that spans several store
 * transactions (see topic-changes.ts): readers see exactly the partitions below
 * `partitionCount` of a topic without a `state`, whatever else the store holds.
 */
export interface TopicRecord {
  readonly name: string;
  readonly topicId: string;
  /** The committed partition count: partition keys at or above it are not the topic's (yet). */
  readonly partitionCount: number;
  readonly configs: Readonly<Record<string, string>>;
  readonly internal: boolean;
  /**
   * Absent on a committed topic (and in records written before it existed). `creating`: the
   * partition keys of a new topic are being written and nobody sees the topic yet; `deleting`:
   * the topic is gone for readers and its keys are being removed.
   */
  readonly state?: TopicRecordState;
  /** The partition count a create or CreatePartitions in flight writes partition keys up to. */
  readonly pendingPartitionCount?: number;
}

export type TopicRecordState = 'creating' | 'deleting';

export interface PartitionRecord {
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
  /** -1 when the partition has no leader (offline). */
  readonly leader: number;
  readonly leaderEpoch: number;
  /** Bumped by every change; AlterPartition compares against it. */
  readonly partitionEpoch: number;
  /**
   * A reassignment in progress (Kafka's PartitionRecord.addingReplicas and removingReplicas,
   * KIP-455): `replicas` is then the target followed by the replicas being removed. Both absent
   * (never empty lists) when the partition is not moving, and in records written before they
   * existed. See partition-reassignment.ts.
   */
  readonly addingReplicas?: readonly number[];
  readonly removingReplicas?: readonly number[];
}

export interface ClusterRecord {
  readonly clusterId: string;
  /** The cluster-wide dynamic broker configs (Kafka's resource ""); absent reads as none. */
  readonly brokerConfigs?: Readonly<Record<string, string>>;
}

/**
 * The producer id counter (Kafka's ProducerIdsRecord): the first id of the next block the
 * controller hands out, as a decimal string (ids are int64). Every block allocation moves it
 * forward by a compare-and-set on this key, so no id is handed out twice, across controller
 * failovers and restarts.
 */
export interface ProducerIdsRecord {
  readonly nextProducerId: string;
  /** Who got the block that ended at nextProducerId, for operators reading the store. */
  readonly lastBlockAssignedTo: string;
}

/** A coordinator that heartbeats; deleted when its session ends or it shuts down. */
export interface CoordinatorRecord {
  readonly coordinatorId: string;
  readonly endpoints: readonly EndpointRecord[];
  /** Random per process start: a new one means the shards it owned must be loaded again. */
  readonly incarnationId: string;
}

/**
 * Who owns one __consumer_offsets partition. The record outlives its owner (coordinatorId is
 * empty while nobody owns it) so the shard epoch only ever grows, across controller failovers.
 */
export interface CoordinatorShardRecord {
  readonly coordinatorId: string;
  readonly shardEpoch: number;
}

export const noLeader = -1;

export function encodeRecord(
  record:
    | BrokerRecord
    | TopicRecord
    | PartitionRecord
    | ClusterRecord
    | ProducerIdsRecord
    | CoordinatorRecord
    | CoordinatorShardRecord
    | AclsRecord,
): Buffer {
  return Buffer.from(JSON.stringify(record));
}

function parse(bytes: Buffer, what: string): Record<string, unknown> {
  const value = JSON.parse(bytes.toString('utf8')) as unknown;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`${what} record is not a JSON object`);
  }
  return value as Record<string, unknown>;
}

function isStringRecord(value: unknown): value is Record<string, string> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((item) => typeof item === 'string')
  );
}

function isIntegerList(value: unknown): value is number[] {
  return Array.isArray(value) && value.every((item) => Number.isInteger(item));
}

export function decodeBrokerRecord(bytes: Buffer): BrokerRecord {
  const value = parse(bytes, 'broker');
  if (
    !Number.isInteger(value['brokerId']) ||
    typeof value['rack'] !== 'string' ||
    !Array.isArray(value['endpoints']) ||
    typeof value['incarnationId'] !== 'string' ||
    typeof value['brokerEpoch'] !== 'string' ||
    !/^\d+$/.test(value['brokerEpoch']) ||
    typeof value['fenced'] !== 'boolean'
  ) {
    throw new Error('broker record is missing fields');
  }
  if (value['dynamicConfigs'] !== undefined && !isStringRecord(value['dynamicConfigs'])) {
    throw new Error('broker record dynamicConfigs is not an object of strings');
  }
  return value as unknown as BrokerRecord;
}

export function decodeTopicRecord(bytes: Buffer): TopicRecord {
  const value = parse(bytes, 'topic');
  if (
    typeof value['name'] !== 'string' ||
    typeof value['topicId'] !== 'string' ||
    !Number.isInteger(value['partitionCount']) ||
    typeof value['configs'] !== 'object' ||
    typeof value['internal'] !== 'boolean'
  ) {
    throw new Error('topic record is missing fields');
  }
  const state = value['state'];
  if (state !== undefined && state !== 'creating' && state !== 'deleting') {
    throw new Error(`topic record has an unknown state ${JSON.stringify(state)}`);
  }
  const pending = value['pendingPartitionCount'];
  if (pending !== undefined && !(Number.isInteger(pending) && (pending as number) > 0)) {
    throw new Error('topic record has a pendingPartitionCount that is not a positive integer');
  }
  return value as unknown as TopicRecord;
}

export function decodePartitionRecord(bytes: Buffer): PartitionRecord {
  const value = parse(bytes, 'partition');
  if (
    !isIntegerList(value['replicas']) ||
    !isIntegerList(value['isr']) ||
    !Number.isInteger(value['leader']) ||
    !Number.isInteger(value['leaderEpoch']) ||
    !Number.isInteger(value['partitionEpoch'])
  ) {
    throw new Error('partition record is missing fields');
  }
  for (const field of ['addingReplicas', 'removingReplicas']) {
    const list = value[field];
    if (list === undefined) continue;
    if (!isIntegerList(list) || !list.every((id) => (value['replicas'] as number[]).includes(id))) {
      throw new Error(`partition record has ${field} that are not a list of its replicas`);
    }
  }
  return value as unknown as PartitionRecord;
}

export function decodeClusterRecord(bytes: Buffer): ClusterRecord {
  const value = parse(bytes, 'cluster');
  if (typeof value['clusterId'] !== 'string') throw new Error('cluster record has no clusterId');
  if (value['brokerConfigs'] !== undefined && !isStringRecord(value['brokerConfigs'])) {
    throw new Error('cluster record brokerConfigs is not an object of strings');
  }
  return value as unknown as ClusterRecord;
}

export function decodeProducerIdsRecord(bytes: Buffer): ProducerIdsRecord {
  const value = parse(bytes, 'producer ids');
  if (
    typeof value['nextProducerId'] !== 'string' ||
    !/^\d{1,19}$/.test(value['nextProducerId']) ||
    typeof value['lastBlockAssignedTo'] !== 'string'
  ) {
    throw new Error('producer ids record is missing fields');
  }
  return value as unknown as ProducerIdsRecord;
}

export function decodeCoordinatorRecord(bytes: Buffer): CoordinatorRecord {
  const value = parse(bytes, 'coordinator');
  if (
    typeof value['coordinatorId'] !== 'string' ||
    !Array.isArray(value['endpoints']) ||
    typeof value['incarnationId'] !== 'string'
  ) {
    throw new Error('coordinator record is missing fields');
  }
  return value as unknown as CoordinatorRecord;
}

export function decodeCoordinatorShardRecord(bytes: Buffer): CoordinatorShardRecord {
  const value = parse(bytes, 'coordinator shard');
  if (
    typeof value['coordinatorId'] !== 'string' ||
    !Number.isInteger(value['shardEpoch']) ||
    (value['shardEpoch'] as number) < 0
  ) {
    throw new Error('coordinator shard record is missing fields');
  }
  return value as unknown as CoordinatorShardRecord;
}

/** An ACL as stored: Kafka's numbers for its types (acl.proto's AclBinding). */
export interface AclRecord {
  readonly resourceType: number;
  readonly resourceName: string;
  readonly patternType: number;
  readonly principal: string;
  readonly host: string;
  readonly operation: number;
  readonly permissionType: number;
}

/** Every ACL of the cluster, in creation order. */
export interface AclsRecord {
  readonly acls: readonly AclRecord[];
}

export function decodeAclsRecord(bytes: Buffer): AclsRecord {
  const value = parse(bytes, 'acls');
  const acls = value['acls'];
  if (!Array.isArray(acls)) throw new Error('acls record has no list of acls');
  for (const acl of acls as Record<string, unknown>[]) {
    const numbers = ['resourceType', 'patternType', 'operation', 'permissionType'];
    const strings = ['resourceName', 'principal', 'host'];
    if (
      typeof acl !== 'object' ||
      acl === null ||
      !numbers.every((field) => Number.isInteger(acl[field])) ||
      !strings.every((field) => typeof acl[field] === 'string')
    ) {
      throw new Error('acls record holds an acl with missing fields');
    }
  }
  return value as unknown as AclsRecord;
}

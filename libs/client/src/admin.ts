import { SpoolError } from '@spool/common';
import {
  OffsetSpec,
  type PartitionCleanerState,
  type ProtoError,
  type TopicMetadata,
  type TopicResult,
} from '@spool/protocol';
import {
  createAcls,
  deleteAcls,
  describeAcls,
  type AclBinding,
  type AclBindingFilter,
} from './acl-admin';
import {
  alterBrokerConfigs,
  describeBrokerConfigs,
  type BrokerConfigChange,
  type BrokerConfigsDescription,
} from './broker-configs';
import { ClientLifecycle, ClientState } from './client-lifecycle';
import { describeTopicDescriptions, describeTopicMetadata, listTopicNames } from './cluster-topics';
import {
  resolveAdminConfig,
  type AdminConfig,
  type AdminOptions,
  type ResolvedSpoolConfig,
} from './config';
import { fromProtoError, partitionName } from './errors';
import { GatewayConnection, type GatewayCallOptions } from './gateway-connection';
import {
  deleteGroup,
  describeGroup,
  fetchGroupOffsets,
  groupOffsetsByTopic,
  listGroups,
  resetGroupOffsets,
  type GroupDescription,
  type GroupListing,
  type GroupOffset,
  type ResetOffsetsOptions,
  type TopicGroupOffsets,
} from './group-admin';
import { listOffsets } from './list-offsets';
import {
  alterUserScramCredentials,
  describeUserScramCredentials,
  type UserScramCredentialDeletion,
  type UserScramCredentialUpsertion,
  type UserScramCredentialsDescription,
} from './user-credentials';
import {
  alterPartitionReassignments,
  listPartitionReassignments,
  type OngoingPartitionReassignment,
  type PartitionReassignmentInput,
} from './partition-reassignments';

/**
 * The admin client, named as KafkaJS's: topics, partitions, configs, the cluster and offsets,
 * through the gateway's admin RPCs (which front the controller), and consumer groups (which the
 * gateway routes to each group's coordinator).
 *
 * Per-topic errors: like KafkaJS, a call throws if any topic failed, one SpoolError whose code is
 * the first failure's, whose message names every failed topic with its code, and whose `details`
 * map each failed topic to its code. The exception is KafkaJS's too: createTopics resolves false
 * instead of throwing when every failure is TOPIC_ALREADY_EXISTS.
 */

export interface ConfigEntryInput {
  readonly name: string;
  readonly value: string;
}

export interface TopicToCreate {
  readonly topic: string;
  /** The controller's default if absent. */
  readonly numPartitions?: number;
  /** The controller's default if absent. */
  readonly replicationFactor?: number;
  readonly configEntries?: readonly ConfigEntryInput[];
}

export interface PartitionDescription {
  readonly partition: number;
  readonly leaderId: number;
  readonly leaderEpoch: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
  readonly offline: boolean;
  /** A reassignment in progress: replicas being added and removed (both empty otherwise). */
  readonly addingReplicas: readonly number[];
  readonly removingReplicas: readonly number[];
  /** A compacted partition's log cleaner, as its leader last reported it; absent otherwise. */
  readonly cleaner?: PartitionCleanerDescription;
  /**
   * A compacted partition's log cleaner on every replica that reported it (each replica cleans
   * its own log), the leader's first; empty for a partition that is not compacted.
   */
  readonly replicaCleaners: readonly PartitionCleanerDescription[];
}

/** What one replica's log cleaner knows of a compacted partition (Kafka's LogCleanerManager). */
export interface PartitionCleanerDescription {
  /** The log is cleaned below this offset. */
  readonly firstDirtyOffset: bigint;
  /** The dirty share of the cleanable bytes at the cleaner's last look, 0 to 1. */
  readonly dirtyRatio: number;
  /** Why the cleaner gave up on the log; absent while it is cleanable. */
  readonly uncleanableReason?: string;
  /** The broker that reported it: the replica it describes. */
  readonly brokerId: number;
}

export interface TopicDescription {
  readonly name: string;
  readonly topicId: string;
  readonly internal: boolean;
  readonly partitions: readonly PartitionDescription[];
  readonly configEntries: readonly ConfigEntryDescription[];
}

export interface ConfigEntryDescription {
  readonly name: string;
  readonly value: string;
  readonly isDefault: boolean;
}

/** KafkaJS's fetchTopicMetadata shape. */
export interface TopicMetadataListing {
  readonly topics: readonly {
    readonly name: string;
    readonly partitions: readonly {
      readonly partitionId: number;
      readonly leader: number;
      readonly replicas: readonly number[];
      readonly isr: readonly number[];
      readonly offlineReplicas: readonly number[];
    }[];
  }[];
}

export interface TopicConfigDescription {
  readonly topic: string;
  readonly configEntries: readonly ConfigEntryDescription[];
}

export interface TopicConfigChange {
  readonly topic: string;
  readonly set?: readonly ConfigEntryInput[];
  /** Names to return to their defaults. */
  readonly delete?: readonly string[];
}

export interface ClusterDescription {
  readonly clusterId: string;
  readonly controllerId: number;
  readonly brokers: readonly {
    readonly nodeId: number;
    readonly rack: string;
    readonly state: string;
    /** Marked by decommissionBroker: it takes no new replicas. */
    readonly decommissioned: boolean;
    readonly endpoints: readonly { name: string; host: string; port: number }[];
  }[];
}

export interface PartitionOffsets {
  readonly partition: number;
  /** The high watermark, as KafkaJS's `offset`. */
  readonly offset: bigint;
  readonly high: bigint;
  /** The log start offset. */
  readonly low: bigint;
}

export class Admin {
  private readonly config: AdminConfig;
  private readonly lifecycle: ClientLifecycle;
  private readonly connection: GatewayConnection;
  private readonly unregister: () => void;

  constructor(spool: ResolvedSpoolConfig, options: AdminOptions = {}) {
    this.config = resolveAdminConfig(options);
    const logger = spool.logger.child({ component: 'admin' });
    this.lifecycle = new ClientLifecycle('admin', logger);
    this.connection = new GatewayConnection(
      spool.brokers,
      spool.clientId,
      logger,
      spool.channelCredentials,
    );
    this.unregister = spool.registry?.register(this) ?? (() => {});
  }

  async connect(): Promise<void> {
    this.lifecycle.ensureOpen('connect');
    await this.connection.waitForReady(this.config.requestTimeoutMs);
    if (this.lifecycle.state === ClientState.Created) {
      this.lifecycle.transitionTo([ClientState.Created], ClientState.Connected);
    }
  }

  /** Closes the connection; calls after it fail CLIENT_CLOSED. Kafka's Admin.close(). */
  async close(): Promise<void> {
    if (!this.lifecycle.isOpen) return;
    this.lifecycle.transitionTo([ClientState.Created, ClientState.Connected], ClientState.Closing);
    this.connection.close();
    this.lifecycle.transitionTo([ClientState.Closing], ClientState.Closed);
    this.unregister();
  }

  /** KafkaJS's name for `close`, kept as an alias. */
  disconnect(): Promise<void> {
    return this.close();
  }

  /** True if every topic was created; false if every failure was TOPIC_ALREADY_EXISTS. */
  async createTopics(request: {
    topics: readonly TopicToCreate[];
    validateOnly?: boolean;
  }): Promise<boolean> {
    this.lifecycle.ensureOpen('create topics');
    const response = await this.connection.call(
      (client) => client.createTopics,
      {
        topics: request.topics.map((topic) => ({
          name: topic.topic,
          numPartitions: topic.numPartitions ?? -1,
          replicationFactor: topic.replicationFactor ?? -1,
          configs: (topic.configEntries ?? []).map((entry) => ({ ...entry, isDefault: false })),
        })),
        validateOnly: request.validateOnly ?? false,
      },
      this.callOptions(),
    );
    const failures = topicFailures(response.results);
    if (failures.length === 0) return true;
    if (failures.every(({ error }) => error.code === 'TOPIC_ALREADY_EXISTS')) return false;
    throw topicsError('create topics', failures);
  }

  async deleteTopics(request: { topics: readonly string[] }): Promise<void> {
    this.lifecycle.ensureOpen('delete topics');
    const response = await this.connection.call(
      (client) => client.deleteTopics,
      { names: [...request.topics] },
      this.callOptions(),
    );
    const failures = topicFailures(response.results);
    if (failures.length > 0) throw topicsError('delete topics', failures);
  }

  async listTopics(options: { includeInternal?: boolean } = {}): Promise<string[]> {
    this.lifecycle.ensureOpen('list topics');
    return listTopicNames(this.connection, options.includeInternal ?? false, this.callOptions());
  }

  async describeTopics(request: { topics: readonly string[] }): Promise<TopicDescription[]> {
    this.lifecycle.ensureOpen('describe topics');
    const descriptions = await describeTopicDescriptions(
      this.connection,
      request.topics,
      this.callOptions(),
    );
    return descriptions.map(({ topic, cleanerStates }) => toTopicDescription(topic, cleanerStates));
  }

  /** KafkaJS's fetchTopicMetadata; every topic when `topics` is absent. */
  async fetchTopicMetadata(
    request: { topics?: readonly string[] } = {},
  ): Promise<TopicMetadataListing> {
    this.lifecycle.ensureOpen('fetch topic metadata');
    const names = request.topics ?? (await this.listTopics());
    const topics = await describeTopicMetadata(this.connection, names, this.callOptions());
    return {
      topics: topics.map((topic) => ({
        name: topic.name,
        partitions: topic.partitions.map((partition) => ({
          partitionId: partition.partition,
          leader: partition.leaderId,
          replicas: partition.replicas,
          isr: partition.isr,
          offlineReplicas: partition.offline ? partition.replicas : [],
        })),
      })),
    };
  }

  async describeConfigs(request: { topics: readonly string[] }): Promise<TopicConfigDescription[]> {
    this.lifecycle.ensureOpen('describe configs');
    const response = await this.connection.call(
      (client) => client.describeConfigs,
      { topics: [...request.topics] },
      this.callOptions(),
    );
    const failures = response.results
      .filter((result) => result.error !== undefined && result.error.code !== '')
      .map((result) => ({ name: result.topic, error: result.error! }));
    if (failures.length > 0) throw topicsError('describe configs', failures);
    return response.results.map((result) => ({
      topic: result.topic,
      configEntries: result.configs.map(toConfigEntry),
    }));
  }

  async alterConfigs(request: {
    topics: readonly TopicConfigChange[];
    validateOnly?: boolean;
  }): Promise<void> {
    this.lifecycle.ensureOpen('alter configs');
    const response = await this.connection.call(
      (client) => client.alterConfigs,
      {
        topics: request.topics.map((change) => ({
          topic: change.topic,
          set: (change.set ?? []).map((entry) => ({ ...entry, isDefault: false })),
          delete: [...(change.delete ?? [])],
        })),
        validateOnly: request.validateOnly ?? false,
      },
      this.callOptions(),
    );
    const failures = topicFailures(response.results);
    if (failures.length > 0) throw topicsError('alter configs', failures);
  }

  async describeCluster(): Promise<ClusterDescription> {
    this.lifecycle.ensureOpen('describe the cluster');
    const response = await this.connection.call(
      (client) => client.describeCluster,
      {},
      this.callOptions(),
    );
    return {
      clusterId: response.clusterId,
      controllerId: response.controllerId,
      brokers: response.brokers.map((broker) => ({
        nodeId: broker.brokerId,
        rack: broker.rack,
        state: broker.state,
        decommissioned: broker.decommissioned,
        endpoints: broker.endpoints.map(({ name, host, port }) => ({ name, host, port })),
      })),
    };
  }

  /** Grows each topic to `count` partitions in all (a topic never shrinks). */
  async createPartitions(request: {
    topicPartitions: readonly { topic: string; count: number }[];
    validateOnly?: boolean;
  }): Promise<void> {
    this.lifecycle.ensureOpen('create partitions');
    const response = await this.connection.call(
      (client) => client.createPartitions,
      {
        topics: request.topicPartitions.map(({ topic, count }) => ({ name: topic, count })),
        validateOnly: request.validateOnly ?? false,
      },
      this.callOptions(),
    );
    const failures = topicFailures(response.results);
    if (failures.length > 0) throw topicsError('create partitions', failures);
  }

  /**
   * Moves partitions to new replica sets, or cancels moves with replicas null (Kafka's
   * alterPartitionReassignments). Throws naming every refused partition.
   */
  async alterPartitionReassignments(request: {
    topics: readonly PartitionReassignmentInput[];
  }): Promise<void> {
    this.lifecycle.ensureOpen('alter partition reassignments');
    await alterPartitionReassignments(this.connection, request.topics, this.callOptions());
  }

  /**
   * Marks a broker decommissioned: the controller places no new replica on it (its replicas move
   * off by reassignment). `cancel` clears the mark.
   */
  async decommissionBroker(brokerId: number, options: { cancel?: boolean } = {}): Promise<void> {
    this.lifecycle.ensureOpen('decommission a broker');
    const response = await this.connection.call(
      (client) => client.decommissionBroker,
      { brokerId, cancel: options.cancel ?? false },
      this.callOptions(),
    );
    if (response.error !== undefined && response.error.code !== '') {
      throw fromProtoError(response.error, `decommission broker ${brokerId}`);
    }
  }

  /**
   * The dynamic configs in effect on a broker, its own and those it inherits from the
   * cluster-wide default (by name, each with its source), or with no broker id the default's own
   * (Kafka's describeConfigs of a BROKER resource). Needs DESCRIBE_CONFIGS on the cluster.
   */
  async describeBrokerConfigs(brokerId?: number): Promise<BrokerConfigsDescription> {
    this.lifecycle.ensureOpen('describe broker configs');
    return describeBrokerConfigs(this.connection, brokerId, this.callOptions());
  }

  /**
   * Sets and removes dynamic configs of a broker, or of the cluster-wide default when brokerId is
   * undefined, all or nothing: an unknown name or a bad value is refused (INVALID_CONFIG naming
   * it), a static setting too (INVALID_REQUEST). Needs ALTER_CONFIGS on the cluster.
   */
  async alterBrokerConfigs(
    brokerId: number | undefined,
    change: BrokerConfigChange,
  ): Promise<void> {
    this.lifecycle.ensureOpen('alter broker configs');
    await alterBrokerConfigs(this.connection, brokerId, change, this.callOptions());
  }

  /** Creates ACLs (Kafka's createAcls); throws naming each refused one. Needs ALTER on the cluster. */
  async createAcls(acls: readonly AclBinding[]): Promise<void> {
    this.lifecycle.ensureOpen('create ACLs');
    await createAcls(this.connection, acls, this.callOptions());
  }

  /** The ACLs a filter matches (Kafka's describeAcls). Needs DESCRIBE on the cluster. */
  async describeAcls(filter: AclBindingFilter): Promise<AclBinding[]> {
    this.lifecycle.ensureOpen('describe ACLs');
    return describeAcls(this.connection, filter, this.callOptions());
  }

  /** Deletes the ACLs the filters match and returns them (Kafka's deleteAcls). */
  async deleteAcls(filters: readonly AclBindingFilter[]): Promise<AclBinding[]> {
    this.lifecycle.ensureOpen('delete ACLs');
    return deleteAcls(this.connection, filters, this.callOptions());
  }

  /**
   * Adds or replaces users' SCRAM credentials and removes others (Kafka's
   * alterUserScramCredentials). Passwords are salted and hashed here; only the salted password
   * is sent. Throws naming every refused user.
   */
  async alterUserScramCredentials(request: {
    upsertions?: readonly UserScramCredentialUpsertion[];
    deletions?: readonly UserScramCredentialDeletion[];
  }): Promise<void> {
    this.lifecycle.ensureOpen('alter user SCRAM credentials');
    await alterUserScramCredentials(this.connection, request, this.callOptions());
  }

  /** The named users' credential mechanisms and iterations (every user when none is named). */
  async describeUserScramCredentials(
    users: readonly string[] = [],
  ): Promise<UserScramCredentialsDescription[]> {
    this.lifecycle.ensureOpen('describe user SCRAM credentials');
    return describeUserScramCredentials(this.connection, users, this.callOptions());
  }

  /** The reassignments in progress, of the given topics or of all (Kafka's list...). */
  async listPartitionReassignments(
    request: { topics?: readonly string[] } = {},
  ): Promise<OngoingPartitionReassignment[]> {
    this.lifecycle.ensureOpen('list partition reassignments');
    return listPartitionReassignments(this.connection, request.topics, this.callOptions());
  }

  /** Each partition's log start offset (low) and high watermark (high and offset). */
  async fetchTopicOffsets(topic: string): Promise<PartitionOffsets[]> {
    const partitions = await this.partitionsOf(topic);
    const query = (spec: OffsetSpec): Promise<{ offset: bigint }[]> =>
      listOffsets(
        this.connection,
        partitions.map((partition) => ({ topic, partition, spec })),
        this.callOptions(),
      );
    const [earliest, latest] = await Promise.all([
      query(OffsetSpec.OFFSET_SPEC_EARLIEST),
      query(OffsetSpec.OFFSET_SPEC_LATEST),
    ]);
    return partitions.map((partition, index) => ({
      partition,
      offset: latest[index]!.offset,
      high: latest[index]!.offset,
      low: earliest[index]!.offset,
    }));
  }

  /** Per partition, the first offset with a timestamp at or after `timestampMs` (-1n if none). */
  async fetchTopicOffsetsByTimestamp(
    topic: string,
    timestampMs: bigint | number,
  ): Promise<{ partition: number; offset: bigint }[]> {
    const partitions = await this.partitionsOf(topic);
    const listed = await listOffsets(
      this.connection,
      partitions.map((partition) => ({
        topic,
        partition,
        spec: OffsetSpec.OFFSET_SPEC_TIMESTAMP,
        timestampMs: BigInt(timestampMs),
      })),
      this.callOptions(),
    );
    return listed.map(({ partition, offset }) => ({ partition, offset }));
  }

  /** Makes records below each offset unreadable (Kafka's DeleteRecords); -1n: the high watermark. */
  async deleteTopicRecords(request: {
    topic: string;
    partitions: readonly { partition: number; offset: bigint }[];
  }): Promise<void> {
    this.lifecycle.ensureOpen('delete records');
    const response = await this.connection.call(
      (client) => client.deleteRecords,
      {
        partitions: request.partitions.map(({ partition, offset }) => ({
          topic: request.topic,
          partition,
          offset,
        })),
        timeoutMs: this.config.requestTimeoutMs,
      },
      this.callOptions(),
    );
    const failure = response.results.find(
      (result) => result.error !== undefined && result.error.code !== '',
    );
    if (failure !== undefined) {
      throw fromProtoError(failure.error!, partitionName(failure.topic, failure.partition));
    }
  }

  /** Every consumer group the coordinators know, by id. */
  async listGroups(): Promise<{ groups: GroupListing[] }> {
    this.lifecycle.ensureOpen('list groups');
    return { groups: await listGroups(this.connection, this.callOptions()) };
  }

  /** Members, their assignments, and per partition the committed offset, high watermark, lag. */
  async describeGroup(groupId: string): Promise<GroupDescription> {
    this.lifecycle.ensureOpen('describe a group');
    return describeGroup(this.connection, groupId, this.callOptions());
  }

  /** Deletes a group and its committed offsets; NON_EMPTY_GROUP while it has members. */
  async deleteGroup(groupId: string): Promise<void> {
    this.lifecycle.ensureOpen('delete a group');
    await deleteGroup(this.connection, groupId, this.callOptions());
  }

  /**
   * Moves the group's committed offsets to the earliest or latest offset, the first at or after
   * a timestamp, or a given offset; only while the group is empty (NON_EMPTY_GROUP otherwise).
   * Resolves with the offsets now committed.
   */
  async resetOffsets(groupId: string, reset: ResetOffsetsOptions): Promise<GroupOffset[]> {
    this.lifecycle.ensureOpen('reset offsets');
    return resetGroupOffsets(this.connection, groupId, reset, this.callOptions());
  }

  /** KafkaJS's fetchOffsets: committed offsets (-1n: none) of the topics, or of every topic. */
  async fetchOffsets(request: {
    groupId: string;
    topics?: readonly string[];
  }): Promise<TopicGroupOffsets[]> {
    this.lifecycle.ensureOpen('fetch offsets');
    return groupOffsetsByTopic(
      await fetchGroupOffsets(this.connection, request.groupId, request.topics, this.callOptions()),
    );
  }

  private async partitionsOf(topic: string): Promise<number[]> {
    this.lifecycle.ensureOpen('fetch offsets');
    const [metadata] = await describeTopicMetadata(this.connection, [topic], this.callOptions());
    return metadata!.partitions.map((partition) => partition.partition).sort((a, b) => a - b);
  }

  private callOptions(): GatewayCallOptions {
    return { deadlineMs: this.config.requestTimeoutMs, attempts: this.config.retries + 1 };
  }
}

function toConfigEntry(entry: {
  name: string;
  value: string;
  isDefault: boolean;
}): ConfigEntryDescription {
  return { name: entry.name, value: entry.value, isDefault: entry.isDefault };
}

function toTopicDescription(
  topic: TopicMetadata,
  cleanerStates: readonly PartitionCleanerState[],
): TopicDescription {
  const cleanersByPartition = new Map<number, PartitionCleanerDescription[]>();
  for (const state of cleanerStates) {
    const cleaners = cleanersByPartition.get(state.partition) ?? [];
    cleaners.push(cleanerOf(state));
    cleanersByPartition.set(state.partition, cleaners);
  }
  return {
    name: topic.name,
    topicId: topic.topicId,
    internal: topic.internal,
    partitions: topic.partitions
      .map((partition) => ({
        partition: partition.partition,
        leaderId: partition.leaderId,
        leaderEpoch: partition.leaderEpoch,
        replicas: partition.replicas,
        isr: partition.isr,
        offline: partition.offline,
        addingReplicas: partition.addingReplicas,
        removingReplicas: partition.removingReplicas,
        ...leaderCleanerOf(partition.leaderId, cleanersByPartition.get(partition.partition)),
        replicaCleaners: cleanersByPartition.get(partition.partition) ?? [],
      }))
      .sort((left, right) => left.partition - right.partition),
    configEntries: topic.configs.map(toConfigEntry),
  };
}

function topicFailures(results: readonly TopicResult[]): { name: string; error: ProtoError }[] {
  return results
    .filter((result) => result.error !== undefined && result.error.code !== '')
    .map((result) => ({ name: result.name, error: result.error! }));
}

/** One error for the failed topics of a call: the first one's code, every topic named. */
function topicsError(
  operation: string,
  failures: readonly { name: string; error: ProtoError }[],
): SpoolError {
  const first = failures[0]!;
  if (failures.length === 1)
    return fromProtoError(first.error, `${operation}: topic ${first.name}`);
  const listing = failures
    .map(({ name, error }) => `topic ${name}: ${error.code} ${error.message}`.trim())
    .join('; ');
  return new SpoolError(
    first.error.code,
    `${operation} failed for ${failures.length} topics: ${listing}`,
    {
      retriable: failures.every(({ error }) => error.retriable),
      details: Object.fromEntries(failures.map(({ name, error }) => [name, error.code])),
    },
  );
}

function cleanerOf(state: PartitionCleanerState): PartitionCleanerDescription {
  return {
    firstDirtyOffset: state.firstDirtyOffset,
    dirtyRatio: state.dirtyRatio,
    ...(state.uncleanableReason === '' ? {} : { uncleanableReason: state.uncleanableReason }),
    brokerId: state.brokerId,
  };
}

function leaderCleanerOf(
  leaderId: number,
  cleaners: readonly PartitionCleanerDescription[] | undefined,
): { cleaner?: PartitionCleanerDescription } {
  const cleaner = cleaners?.find((state) => state.brokerId === leaderId);
  return cleaner === undefined ? {} : { cleaner };
}

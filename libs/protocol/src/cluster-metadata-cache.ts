/**
 * A follower's copy of the cluster metadata, built from the controller's WatchMetadata stream: a
 * snapshot replaces everything, a delta replaces the brokers and topics it names, the single
 * partitions it names (a leader or ISR change in a topic otherwise unchanged), and removes the
 * deleted ones. Storage nodes, coordinators and gateways keep one each; nobody polls.
 *
 * Cost follows the change, not the cluster: a delta of k partitions costs O(k) plus one copy of
 * each touched topic's partition list (topics are replaced, never mutated, so a reader holding a
 * TopicMetadata keeps a consistent one), and a partition is found by its number in O(1).
 *
 * It also follows the coordinators and which of them owns each __consumer_offsets partition
 * (shard), so a gateway routes a group to its coordinator and a coordinator knows its shards.
 */
import type { BrokerMetadata, PartitionMetadata, TopicMetadata } from './generated/spool/v1/common';
import type { AclBinding } from './generated/spool/v1/acl';
import type {
  CoordinatorMetadata,
  CoordinatorShard,
  UserScramCredentials,
  WatchMetadataResponse,
} from './generated/spool/v1/controller';

export interface MetadataChange {
  readonly version: bigint;
  readonly snapshot: boolean;
  /** Topics replaced whole (all of them on a snapshot). */
  readonly changedTopics: readonly string[];
  /** Partitions replaced alone, in topics not in changedTopics (a leader or ISR change). */
  readonly changedPartitions: readonly PartitionMetadata[];
  readonly deletedTopics: readonly string[];
  readonly changedBrokers: readonly number[];
  readonly deletedBrokers: readonly number[];
  /** Shards whose owner or epoch changed (all of them on a snapshot). */
  readonly changedShards: readonly number[];
  readonly changedCoordinators: readonly string[];
  readonly deletedCoordinators: readonly string[];
  /** Whether the ACLs were replaced (always on a snapshot). */
  readonly aclsChanged: boolean;
}

export class ClusterMetadataCache {
  readonly brokers = new Map<number, BrokerMetadata>();
  readonly topics = new Map<string, TopicMetadata>();
  readonly coordinators = new Map<string, CoordinatorMetadata>();
  /** __consumer_offsets partition → its owner (empty when none) and shard epoch. */
  readonly coordinatorShards = new Map<number, CoordinatorShard>();
  private aclsValue: readonly AclBinding[] = [];
  /** Users' SCRAM credentials by user name (the stream's SecurityMetadata). */
  readonly users = new Map<string, UserScramCredentials>();
  private versionValue = 0n;
  private controllerAddressValue = '';
  private readonly listeners = new Set<(change: MetadataChange) => void>();

  get version(): bigint {
    return this.versionValue;
  }

  /** Every ACL of the cluster, as the controller last published them. */
  get acls(): readonly AclBinding[] {
    return this.aclsValue;
  }

  get controllerAddress(): string {
    return this.controllerAddressValue;
  }

  /** Applies one message of the stream; messages older than what is applied are ignored. */
  apply(message: WatchMetadataResponse): void {
    if (!message.snapshot && message.metadataVersion <= this.versionValue) return;
    if (message.snapshot) {
      this.brokers.clear();
      this.topics.clear();
      this.coordinators.clear();
      this.coordinatorShards.clear();
      this.users.clear();
    }
    for (const user of message.security?.users ?? []) this.users.set(user.user, user);
    for (const name of message.security?.deletedUsers ?? []) this.users.delete(name);
    for (const broker of message.brokers) this.brokers.set(broker.brokerId, broker);
    for (const topic of message.topics) this.topics.set(topic.name, topic);
    const changedPartitions = message.snapshot ? [] : this.applyPartitions(message);
    for (const name of message.deletedTopics) this.topics.delete(name);
    for (const brokerId of message.deletedBrokers) this.brokers.delete(brokerId);
    for (const coordinator of message.coordinators)
      this.coordinators.set(coordinator.coordinatorId, coordinator);
    for (const coordinatorId of message.deletedCoordinators)
      this.coordinators.delete(coordinatorId);
    for (const shard of message.coordinatorShards)
      this.coordinatorShards.set(shard.partition, shard);
    const aclsChanged = message.snapshot || message.aclSet !== undefined;
    if (aclsChanged) this.aclsValue = message.aclSet?.acls ?? [];
    this.versionValue = message.metadataVersion;
    if (message.controllerAddress !== '') this.controllerAddressValue = message.controllerAddress;
    const change: MetadataChange = {
      version: message.metadataVersion,
      snapshot: message.snapshot,
      changedTopics: message.topics.map((topic) => topic.name),
      changedPartitions,
      deletedTopics: message.deletedTopics,
      changedBrokers: message.brokers.map((broker) => broker.brokerId),
      deletedBrokers: message.deletedBrokers,
      changedShards: message.coordinatorShards.map((shard) => shard.partition),
      changedCoordinators: message.coordinators.map((coordinator) => coordinator.coordinatorId),
      deletedCoordinators: message.deletedCoordinators,
      aclsChanged,
    };
    for (const listener of this.listeners) listener(change);
  }

  /**
   * Replaces the partitions a delta names, copying each touched topic once. A partition of a
   * topic this cache does not hold, or that its topic does not have, is a stream out of step
   * with this cache; it is skipped (the next snapshot repairs it) and left out of the change.
   */
  private applyPartitions(message: WatchMetadataResponse): PartitionMetadata[] {
    const byTopic = new Map<string, PartitionMetadata[]>();
    for (const partition of message.changedPartitions) {
      const list = byTopic.get(partition.topic);
      if (list === undefined) byTopic.set(partition.topic, [partition]);
      else list.push(partition);
    }
    const applied: PartitionMetadata[] = [];
    for (const [name, changed] of byTopic) {
      const topic = this.topics.get(name);
      if (topic === undefined) continue;
      const partitions = [...topic.partitions];
      for (const partition of changed) {
        const index = indexOfPartition(partitions, partition.partition);
        if (index === -1) continue;
        partitions[index] = partition;
        applied.push(partition);
      }
      this.topics.set(name, { ...topic, partitions });
    }
    return applied;
  }

  onChange(listener: (change: MetadataChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** O(1): the controller lists a topic's partitions in order, so partition n sits at index n. */
  partition(topic: string, partition: number): PartitionMetadata | undefined {
    const partitions = this.topics.get(topic)?.partitions;
    if (partitions === undefined) return undefined;
    const index = indexOfPartition(partitions, partition);
    return index === -1 ? undefined : partitions[index];
  }

  /** A topic config's effective value (the controller sends defaults too). */
  topicConfig(topic: string, name: string): string | undefined {
    return this.topics.get(topic)?.configs.find((entry) => entry.name === name)?.value;
  }

  /** How many shards the coordinators share: __consumer_offsets' partition count, 0 if unknown. */
  get coordinatorShardCount(): number {
    return this.coordinatorShards.size;
  }

  /** The coordinator that owns a shard, or undefined when none does (or it is not known yet). */
  shardOwner(partition: number): CoordinatorShard | undefined {
    const shard = this.coordinatorShards.get(partition);
    return shard === undefined || shard.coordinatorId === '' ? undefined : shard;
  }

  /** The host and port of a coordinator's named listener, if it is known. */
  coordinatorEndpoint(
    coordinatorId: string,
    name: string,
  ): { host: string; port: number } | undefined {
    const endpoint = this.coordinators
      .get(coordinatorId)
      ?.endpoints.find((candidate) => candidate.name === name);
    return endpoint === undefined ? undefined : { host: endpoint.host, port: endpoint.port };
  }

  /** The host and port of a broker's named listener ("grpc", "data"), if it is known. */
  endpoint(brokerId: number, name: string): { host: string; port: number } | undefined {
    const endpoint = this.brokers
      .get(brokerId)
      ?.endpoints.find((candidate) => candidate.name === name);
    return endpoint === undefined ? undefined : { host: endpoint.host, port: endpoint.port };
  }
}

/** Where partition `partition` is in a topic's list: at its own index, or found by a scan. */
function indexOfPartition(partitions: readonly PartitionMetadata[], partition: number): number {
  if (partitions[partition]?.partition === partition) return partition;
  return partitions.findIndex((candidate) => candidate.partition === partition);
}

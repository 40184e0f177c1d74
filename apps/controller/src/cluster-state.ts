/**
 * The controller's in-memory view of the metadata store: brokers, topics and partitions as of
 * one store revision, kept current by applying the store's watch events in order. The active
 * controller writes only to the store and answers a write once this view has applied its
 * revision, so every read after a write sees it (read-your-writes), and the view is the same
 * whether a change came from this controller or an earlier one.
 *
 * The metadata version that WatchMetadata publishes is the store revision: monotonic across
 * controller failovers, because the store, not the controller, counts it.
 */
import type { KeyValue, MetadataKeys, WatchEvent } from '@spool/metadata';
import {
  decodeBrokerRecord,
  decodeClusterRecord,
  decodeCoordinatorRecord,
  decodeCoordinatorShardRecord,
  decodePartitionRecord,
  decodeProducerIdsRecord,
  decodeTopicRecord,
  type BrokerRecord,
  type CoordinatorRecord,
  type CoordinatorShardRecord,
  type PartitionRecord,
  type TopicRecord,
} from './metadata-records';

export interface BrokerState {
  readonly record: BrokerRecord;
  readonly brokerEpoch: bigint;
  readonly modRevision: bigint;
}

export interface PartitionState {
  readonly topic: string;
  readonly partition: number;
  readonly record: PartitionRecord;
  readonly modRevision: bigint;
}

export interface TopicState {
  readonly record: TopicRecord;
  readonly modRevision: bigint;
  readonly partitions: Map<number, PartitionState>;
}

export interface CoordinatorState {
  readonly record: CoordinatorRecord;
  readonly modRevision: bigint;
}

export interface CoordinatorShardState {
  readonly partition: number;
  readonly record: CoordinatorShardRecord;
  readonly modRevision: bigint;
}

/** What one applied revision changed, for WatchMetadata deltas. */
export interface MetadataDelta {
  readonly revision: bigint;
  readonly changedBrokers: ReadonlySet<number>;
  readonly deletedBrokers: ReadonlySet<number>;
  readonly changedTopics: ReadonlySet<string>;
  readonly deletedTopics: ReadonlySet<string>;
  readonly changedCoordinators: ReadonlySet<string>;
  readonly deletedCoordinators: ReadonlySet<string>;
  readonly changedShards: ReadonlySet<number>;
}

export class ClusterState {
  readonly brokers = new Map<number, BrokerState>();
  readonly topics = new Map<string, TopicState>();
  readonly coordinators = new Map<string, CoordinatorState>();
  /** __consumer_offsets partition → its owner and shard epoch. */
  readonly coordinatorShards = new Map<number, CoordinatorShardState>();
  clusterId = '';
  /**
   * The producer id counter as last written (undefined until the first block is allocated) and
   * the revision of that write, for the next allocation's compare-and-set.
   */
  producerIds: { nextProducerId: bigint; modRevision: bigint } | undefined;
  private revisionValue = 0n;
  private readonly revisionWaiters: Array<{ revision: bigint; resolve: () => void }> = [];
  private readonly listeners = new Set<(delta: MetadataDelta) => void>();
  /** Partition records that arrived before their topic record (same revision, any order). */
  private readonly orphanPartitions = new Map<string, Map<number, PartitionState>>();

  constructor(
    private readonly keys: MetadataKeys,
    private readonly onBadRecord: (key: string, error: unknown) => void,
  ) {}

  get revision(): bigint {
    return this.revisionValue;
  }

  /** Replaces the view with a full read of the cluster prefix at `revision`. */
  load(entries: readonly KeyValue[], revision: bigint): void {
    this.brokers.clear();
    this.topics.clear();
    this.coordinators.clear();
    this.coordinatorShards.clear();
    this.orphanPartitions.clear();
    this.producerIds = undefined;
    for (const entry of entries) this.applyPut(entry, undefined);
    this.revisionValue = revision;
    this.releaseWaiters();
  }

  /** Applies the events of one store revision and tells the listeners what changed. */
  apply(events: readonly WatchEvent[], revision: bigint): void {
    const delta: MetadataDelta = {
      revision,
      changedBrokers: new Set(),
      deletedBrokers: new Set(),
      changedTopics: new Set(),
      deletedTopics: new Set(),
      changedCoordinators: new Set(),
      deletedCoordinators: new Set(),
      changedShards: new Set(),
    };
    for (const event of events) {
      if (event.kind === 'put') this.applyPut(event.keyValue, delta);
      else this.applyDelete(event.key, delta);
    }
    for (const topic of delta.deletedTopics) (delta.changedTopics as Set<string>).delete(topic);
    this.revisionValue = revision;
    for (const listener of this.listeners) listener(delta);
    this.releaseWaiters();
  }

  private applyPut(entry: KeyValue, delta: MetadataDelta | undefined): void {
    try {
      const brokerId = this.keys.parseBroker(entry.key);
      if (brokerId !== undefined) {
        const record = decodeBrokerRecord(entry.value);
        this.brokers.set(brokerId, {
          record,
          brokerEpoch: BigInt(record.brokerEpoch),
          modRevision: entry.modRevision,
        });
        (delta?.changedBrokers as Set<number> | undefined)?.add(brokerId);
        return;
      }
      const topicName = this.keys.parseTopic(entry.key);
      if (topicName !== undefined) {
        const existing = this.topics.get(topicName);
        const partitions =
          existing?.partitions ?? this.orphanPartitions.get(topicName) ?? new Map();
        this.orphanPartitions.delete(topicName);
        this.topics.set(topicName, {
          record: decodeTopicRecord(entry.value),
          modRevision: entry.modRevision,
          partitions,
        });
        (delta?.changedTopics as Set<string> | undefined)?.add(topicName);
        (delta?.deletedTopics as Set<string> | undefined)?.delete(topicName);
        return;
      }
      const partitionKey = this.keys.parsePartition(entry.key);
      if (partitionKey !== undefined) {
        const state: PartitionState = {
          ...partitionKey,
          record: decodePartitionRecord(entry.value),
          modRevision: entry.modRevision,
        };
        const topic = this.topics.get(partitionKey.topic);
        if (topic !== undefined) topic.partitions.set(partitionKey.partition, state);
        else {
          const orphans =
            this.orphanPartitions.get(partitionKey.topic) ?? new Map<number, PartitionState>();
          orphans.set(partitionKey.partition, state);
          this.orphanPartitions.set(partitionKey.topic, orphans);
        }
        (delta?.changedTopics as Set<string> | undefined)?.add(partitionKey.topic);
        return;
      }
      const coordinatorId = this.keys.parseCoordinator(entry.key);
      if (coordinatorId !== undefined) {
        this.coordinators.set(coordinatorId, {
          record: decodeCoordinatorRecord(entry.value),
          modRevision: entry.modRevision,
        });
        (delta?.changedCoordinators as Set<string> | undefined)?.add(coordinatorId);
        (delta?.deletedCoordinators as Set<string> | undefined)?.delete(coordinatorId);
        return;
      }
      const shard = this.keys.parseCoordinatorShard(entry.key);
      if (shard !== undefined) {
        this.coordinatorShards.set(shard, {
          partition: shard,
          record: decodeCoordinatorShardRecord(entry.value),
          modRevision: entry.modRevision,
        });
        (delta?.changedShards as Set<number> | undefined)?.add(shard);
        return;
      }
      if (entry.key === this.keys.cluster())
        this.clusterId = decodeClusterRecord(entry.value).clusterId;
      if (entry.key === this.keys.producerIds()) {
        this.producerIds = {
          nextProducerId: BigInt(decodeProducerIdsRecord(entry.value).nextProducerId),
          modRevision: entry.modRevision,
        };
      }
    } catch (error) {
      this.onBadRecord(entry.key, error);
    }
  }

  private applyDelete(key: string, delta: MetadataDelta): void {
    const brokerId = this.keys.parseBroker(key);
    if (brokerId !== undefined) {
      this.brokers.delete(brokerId);
      (delta.deletedBrokers as Set<number>).add(brokerId);
      return;
    }
    const topicName = this.keys.parseTopic(key);
    if (topicName !== undefined) {
      this.topics.delete(topicName);
      this.orphanPartitions.delete(topicName);
      (delta.deletedTopics as Set<string>).add(topicName);
      return;
    }
    const coordinatorId = this.keys.parseCoordinator(key);
    if (coordinatorId !== undefined) {
      this.coordinators.delete(coordinatorId);
      (delta.changedCoordinators as Set<string>).delete(coordinatorId);
      (delta.deletedCoordinators as Set<string>).add(coordinatorId);
      return;
    }
    const partitionKey = this.keys.parsePartition(key);
    if (partitionKey !== undefined) {
      this.topics.get(partitionKey.topic)?.partitions.delete(partitionKey.partition);
      this.orphanPartitions.get(partitionKey.topic)?.delete(partitionKey.partition);
      if (this.topics.has(partitionKey.topic))
        (delta.changedTopics as Set<string>).add(partitionKey.topic);
    }
  }

  /** Resolves once the view has applied `revision` (or a later one). */
  waitForRevision(revision: bigint): Promise<void> {
    if (this.revisionValue >= revision) return Promise.resolve();
    return new Promise((resolve) => this.revisionWaiters.push({ revision, resolve }));
  }

  private releaseWaiters(): void {
    for (let index = this.revisionWaiters.length - 1; index >= 0; index--) {
      const waiter = this.revisionWaiters[index]!;
      if (waiter.revision <= this.revisionValue) {
        this.revisionWaiters.splice(index, 1);
        waiter.resolve();
      }
    }
  }

  onDelta(listener: (delta: MetadataDelta) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Every partition, in topic then partition order. */
  *allPartitions(): Generator<PartitionState> {
    for (const topic of this.topics.values()) yield* topic.partitions.values();
  }

  liveBrokerIds(): number[] {
    return [...this.brokers.values()]
      .filter((broker) => !broker.record.fenced)
      .map((broker) => broker.record.brokerId);
  }
}

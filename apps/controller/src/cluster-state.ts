/**
 * The controller's in-memory view of the metadata store: brokers, topics and partitions as of
 * one store revision, kept current by applying the store's watch events in order. The active
 * controller writes only to the store and answers a write once this view has applied its
 * revision, so every read after a write sees it (read-your-writes), and the view is the same
 * whether a change came from this controller or an earlier one.
 *
 * The metadata version that WatchMetadata publishes is the store revision: monotonic across
 * controller failovers, because the store, not the controller, counts it.
 *
 * Visibility: a topic change may span several store transactions (topic-changes.ts), and the
 * topic's own record is its commit point. `topics` holds only committed topics (no `state` in
 * their record) and, in each, only the partitions below the record's partitionCount. Everything
 * else the store holds under a topic (a topic being created or deleted, partition keys written
 * ahead of a CreatePartitions flip, keys whose topic record is gone) is kept apart and reported
 * by `pendingTopicChanges()`, for the active controller to finish or roll back. When the record
 * flips, the partitions it commits move into the view in the same revision, so a delta carries
 * them all at once; a partition put that stays hidden makes no delta at all. Each event costs
 * O(1), except a flip, which costs O(partitions it moves) once.
 */
import { SpoolError } from '@spool/common';
import type { KeyValue, MetadataKeys, WatchEvent } from '@spool/metadata';
import {
  decodeAclsRecord,
  decodeBrokerRecord,
  decodeClusterRecord,
  decodeCoordinatorRecord,
  decodeCoordinatorShardRecord,
  decodePartitionRecord,
  decodeProducerIdsRecord,
  decodeTopicRecord,
  type AclRecord,
  type BrokerRecord,
  type ClusterRecord,
  type CoordinatorRecord,
  type CoordinatorShardRecord,
  type PartitionRecord,
  type TopicRecord,
} from './metadata-records';
import { decodeUserRecord, type UserState } from './user-credentials';

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
  /** The committed partitions only: those below record.partitionCount. */
  readonly partitions: Map<number, PartitionState>;
}

/** What the store holds under a topic that readers must not see: a change in flight or left. */
export interface PendingTopicChange {
  readonly topic: string;
  /** The topic's record; undefined when only partition keys are left (their topic key is gone). */
  readonly record: TopicRecord | undefined;
  /** The record's last write, the compare every step of finishing or rolling back carries. */
  readonly modRevision: bigint | undefined;
  /** Hidden partition keys: every one while creating or deleting, else those at or above the count. */
  readonly partitions: readonly number[];
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
  /** Whether the ACL list was written or deleted in this revision. */
  aclsChanged: boolean;
  readonly changedUsers: ReadonlySet<string>;
  readonly deletedUsers: ReadonlySet<string>;
}

export class ClusterState {
  readonly brokers = new Map<number, BrokerState>();
  readonly topics = new Map<string, TopicState>();
  readonly coordinators = new Map<string, CoordinatorState>();
  /** __consumer_offsets partition → its owner and shard epoch. */
  readonly coordinatorShards = new Map<number, CoordinatorShardState>();
  /** Users' SCRAM credentials, by user name. */
  readonly users = new Map<string, UserState>();
  clusterId = '';
  /** The cluster record as last written (its cluster-wide broker configs) and that write. */
  cluster: { record: ClusterRecord; modRevision: bigint } | undefined;
  /**
   * The producer id counter as last written (undefined until the first block is allocated) and
   * the revision of that write, for the next allocation's compare-and-set.
   */
  producerIds: { nextProducerId: bigint; modRevision: bigint } | undefined;
  /** Every ACL and the revision of its key's last write (0n: never written), for compare-and-set. */
  acls: { readonly list: readonly AclRecord[]; readonly modRevision: bigint } = {
    list: [],
    modRevision: 0n,
  };
  private revisionValue = 0n;
  private readonly revisionWaiters: Array<{
    revision: bigint;
    resolve: () => void;
    reject: (error: SpoolError) => void;
    timer: NodeJS.Timeout;
  }> = [];
  /** Set once the controller stopped leading with this view: every wait fails with it. */
  private abandonedError: SpoolError | undefined;
  private readonly listeners = new Set<(delta: MetadataDelta) => void>();
  /** Topics whose record has a state (creating, deleting): in the store, not in the view. */
  private readonly hiddenTopics = new Map<string, { record: TopicRecord; modRevision: bigint }>();
  /**
   * Partition keys outside the view, per topic: those of hidden topics, those at or above a
   * committed topic's count, and those whose topic record has not arrived (same revision, any
   * order) or is gone.
   */
  private readonly hiddenPartitions = new Map<string, Map<number, PartitionState>>();

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
    this.users.clear();
    this.hiddenTopics.clear();
    this.hiddenPartitions.clear();
    this.producerIds = undefined;
    this.acls = { list: [], modRevision: 0n };
    this.cluster = undefined;
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
      aclsChanged: false,
      changedUsers: new Set(),
      deletedUsers: new Set(),
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
        this.applyTopicRecord(topicName, decodeTopicRecord(entry.value), entry.modRevision, delta);
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
        if (topic !== undefined && partitionKey.partition < topic.record.partitionCount) {
          topic.partitions.set(partitionKey.partition, state);
          (delta?.changedTopics as Set<string> | undefined)?.add(partitionKey.topic);
        } else {
          this.hide(state);
        }
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
      const user = this.keys.parseUser(entry.key);
      if (user !== undefined) {
        this.users.set(user, {
          record: decodeUserRecord(entry.value),
          modRevision: entry.modRevision,
        });
        (delta?.changedUsers as Set<string> | undefined)?.add(user);
        (delta?.deletedUsers as Set<string> | undefined)?.delete(user);
        return;
      }
      if (entry.key === this.keys.cluster()) {
        const record = decodeClusterRecord(entry.value);
        this.clusterId = record.clusterId;
        this.cluster = { record, modRevision: entry.modRevision };
      }
      if (entry.key === this.keys.acls()) {
        this.acls = { list: decodeAclsRecord(entry.value).acls, modRevision: entry.modRevision };
        if (delta !== undefined) delta.aclsChanged = true;
      }
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
    if (key === this.keys.acls()) {
      this.acls = { list: [], modRevision: 0n };
      delta.aclsChanged = true;
      return;
    }
    const brokerId = this.keys.parseBroker(key);
    if (brokerId !== undefined) {
      this.brokers.delete(brokerId);
      (delta.deletedBrokers as Set<number>).add(brokerId);
      return;
    }
    const topicName = this.keys.parseTopic(key);
    if (topicName !== undefined) {
      this.hiddenTopics.delete(topicName);
      const topic = this.topics.get(topicName);
      if (topic !== undefined) {
        // Its partition keys, if any are left, are now keys without a topic: hidden.
        for (const partition of topic.partitions.values()) this.hide(partition);
        this.topics.delete(topicName);
        (delta.deletedTopics as Set<string>).add(topicName);
      }
      return;
    }
    const user = this.keys.parseUser(key);
    if (user !== undefined) {
      this.users.delete(user);
      (delta.changedUsers as Set<string>).delete(user);
      (delta.deletedUsers as Set<string>).add(user);
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
      const { topic, partition } = partitionKey;
      if (this.topics.get(topic)?.partitions.delete(partition) === true)
        (delta.changedTopics as Set<string>).add(topic);
      const hidden = this.hiddenPartitions.get(topic);
      hidden?.delete(partition);
      if (hidden?.size === 0) this.hiddenPartitions.delete(topic);
    }
  }

  /**
   * A topic record was written. Cases:
   *   1. It has a state (creating, deleting): the topic leaves the view, or never enters it; a
   *      committed topic that starts deleting is a deleted topic for readers from here on.
   *   2. It is committed: hidden partitions below its count join the view (the flip of a create
   *      or CreatePartitions), and any visible ones at or above it (never written so) leave.
   *      Readers hear of it when the topic is new to them or what they see of it changed; a
   *      record that only gained or lost a pending marker changes nothing they see.
   */
  private applyTopicRecord(
    name: string,
    record: TopicRecord,
    modRevision: bigint,
    delta: MetadataDelta | undefined,
  ): void {
    const previous = this.topics.get(name);
    if (record.state !== undefined) {
      // Case 1.
      this.hiddenTopics.set(name, { record, modRevision });
      if (previous === undefined) return;
      for (const partition of previous.partitions.values()) this.hide(partition);
      this.topics.delete(name);
      (delta?.deletedTopics as Set<string> | undefined)?.add(name);
      (delta?.changedTopics as Set<string> | undefined)?.delete(name);
      return;
    }
    // Case 2.
    this.hiddenTopics.delete(name);
    const partitions = previous?.partitions ?? new Map<number, PartitionState>();
    if (previous !== undefined && record.partitionCount < previous.record.partitionCount) {
      for (const partition of [...partitions.values()]) {
        if (partition.partition < record.partitionCount) continue;
        partitions.delete(partition.partition);
        this.hide(partition);
      }
    }
    const hidden = this.hiddenPartitions.get(name);
    if (hidden !== undefined) {
      for (const partition of [...hidden.values()]) {
        if (partition.partition >= record.partitionCount) continue;
        partitions.set(partition.partition, partition);
        hidden.delete(partition.partition);
      }
      if (hidden.size === 0) this.hiddenPartitions.delete(name);
    }
    this.topics.set(name, { record, modRevision, partitions });
    if (previous === undefined || !sameForReaders(previous.record, record)) {
      (delta?.changedTopics as Set<string> | undefined)?.add(name);
      (delta?.deletedTopics as Set<string> | undefined)?.delete(name);
    }
  }

  private hide(partition: PartitionState): void {
    let hidden = this.hiddenPartitions.get(partition.topic);
    if (hidden === undefined) {
      hidden = new Map();
      this.hiddenPartitions.set(partition.topic, hidden);
    }
    hidden.set(partition.partition, partition);
  }

  /**
   * Every topic whose store keys readers do not see in full: a create or delete in flight or
   * abandoned, partitions written ahead of a CreatePartitions flip, keys left without a topic.
   * O(hidden topics + committed topics); the partition lists are copies.
   */
  pendingTopicChanges(): PendingTopicChange[] {
    const names = new Set([...this.hiddenTopics.keys(), ...this.hiddenPartitions.keys()]);
    for (const [name, topic] of this.topics) {
      if (topic.record.pendingPartitionCount !== undefined) names.add(name);
    }
    return [...names].sort().map((name) => {
      const stored = this.hiddenTopics.get(name) ?? this.topics.get(name);
      const hidden = this.hiddenPartitions.get(name);
      return {
        topic: name,
        record: stored?.record,
        modRevision: stored?.modRevision,
        partitions: hidden === undefined ? [] : [...hidden.keys()].sort((a, b) => a - b),
      };
    });
  }

  /**
   * Resolves once the view has applied `revision` (or a later one). Rejects with
   * REQUEST_TIMED_OUT when `timeoutMs` pass first, and with the abandonment's error (at once)
   * when the controller stops leading with this view, whose watch then applies nothing more.
   * Either way the write may have committed: the caller answers a retriable error and the
   * client's retry, on whichever controller is active, meets the committed state.
   */
  waitForRevision(revision: bigint, timeoutMs: number): Promise<void> {
    if (this.revisionValue >= revision) return Promise.resolve();
    if (this.abandonedError !== undefined) return Promise.reject(this.abandonedError);
    return new Promise((resolve, reject) => {
      const waiter = {
        revision,
        resolve,
        reject,
        timer: setTimeout(() => {
          const index = this.revisionWaiters.indexOf(waiter);
          if (index >= 0) this.revisionWaiters.splice(index, 1);
          reject(
            new SpoolError(
              'REQUEST_TIMED_OUT',
              `the metadata view did not apply revision ${revision} within ${timeoutMs} ms ` +
                `(it is at ${this.revisionValue}); the write may have committed, retry`,
            ),
          );
        }, timeoutMs),
      };
      this.revisionWaiters.push(waiter);
    });
  }

  /**
   * The controller stopped leading with this view (its lease ended, or a write proved it
   * deposed): every wait for a revision fails now with `error`, and so does every later one.
   */
  abandon(error: SpoolError): void {
    this.abandonedError ??= error;
    for (const waiter of this.revisionWaiters.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.reject(this.abandonedError);
    }
  }

  private releaseWaiters(): void {
    for (let index = this.revisionWaiters.length - 1; index >= 0; index--) {
      const waiter = this.revisionWaiters[index]!;
      if (waiter.revision <= this.revisionValue) {
        this.revisionWaiters.splice(index, 1);
        clearTimeout(waiter.timer);
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

/** Whether readers see the same topic in both records (partitions aside). */
function sameForReaders(left: TopicRecord, right: TopicRecord): boolean {
  return (
    left.topicId === right.topicId &&
    left.partitionCount === right.partitionCount &&
    left.internal === right.internal &&
    JSON.stringify(left.configs) === JSON.stringify(right.configs)
  );
}

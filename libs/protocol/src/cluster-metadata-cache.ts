/**
 * A follower's copy of the cluster metadata, built from the controller's WatchMetadata stream: a
 * snapshot replaces everything, a delta replaces the brokers and topics it names and removes the
 * deleted ones. Storage nodes, coordinators and gateways keep one each; nobody polls.
 */
import type { BrokerMetadata, PartitionMetadata, TopicMetadata } from './generated/spool/v1/common';
import type { WatchMetadataResponse } from './generated/spool/v1/controller';

export interface MetadataChange {
  readonly version: bigint;
  readonly snapshot: boolean;
  readonly changedTopics: readonly string[];
  readonly deletedTopics: readonly string[];
  readonly changedBrokers: readonly number[];
  readonly deletedBrokers: readonly number[];
}

export class ClusterMetadataCache {
  readonly brokers = new Map<number, BrokerMetadata>();
  readonly topics = new Map<string, TopicMetadata>();
  private versionValue = 0n;
  private controllerAddressValue = '';
  private readonly listeners = new Set<(change: MetadataChange) => void>();

  get version(): bigint {
    return this.versionValue;
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
    }
    for (const broker of message.brokers) this.brokers.set(broker.brokerId, broker);
    for (const topic of message.topics) this.topics.set(topic.name, topic);
    for (const name of message.deletedTopics) this.topics.delete(name);
    for (const brokerId of message.deletedBrokers) this.brokers.delete(brokerId);
    this.versionValue = message.metadataVersion;
    if (message.controllerAddress !== '') this.controllerAddressValue = message.controllerAddress;
    const change: MetadataChange = {
      version: message.metadataVersion,
      snapshot: message.snapshot,
      changedTopics: message.topics.map((topic) => topic.name),
      deletedTopics: message.deletedTopics,
      changedBrokers: message.brokers.map((broker) => broker.brokerId),
      deletedBrokers: message.deletedBrokers,
    };
    for (const listener of this.listeners) listener(change);
  }

  onChange(listener: (change: MetadataChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  partition(topic: string, partition: number): PartitionMetadata | undefined {
    return this.topics
      .get(topic)
      ?.partitions.find((candidate) => candidate.partition === partition);
  }

  /** A topic config's effective value (the controller sends defaults too). */
  topicConfig(topic: string, name: string): string | undefined {
    return this.topics.get(topic)?.configs.find((entry) => entry.name === name)?.value;
  }

  /** The host and port of a broker's named listener ("grpc", "data"), if it is known. */
  endpoint(brokerId: number, name: string): { host: string; port: number } | undefined {
    const endpoint = this.brokers
      .get(brokerId)
      ?.endpoints.find((candidate) => candidate.name === name);
    return endpoint === undefined ? undefined : { host: endpoint.host, port: endpoint.port };
  }
}

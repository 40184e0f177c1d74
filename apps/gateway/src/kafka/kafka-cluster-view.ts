/**
 * The cluster as Kafka clients are shown it through this gateway (docs/kafka-protocol.md): one
 * broker, node id 0, at this gateway's advertised Kafka address, leader of every partition that
 * has a live leader and coordinator of every group, since the gateway serves any partition and
 * forwards group calls. Every gateway gives the same answer, so a client that reconnects to
 * another one behind the same Service sees the same cluster.
 *
 * Why not each storage node as a broker at the gateway's address, which would show the real
 * leaders: librdkafka (kcat, confluent-kafka) keys brokers by host and port, and folds brokers
 * that share an address into one, moving the node id along, so partitions led by the others
 * never find their broker. Replicas and ISR still name the storage nodes that hold the partition.
 * Topic ids are the controller's, as UUIDs.
 */
import type { Logger } from '@spool/common';
import type { BrokerMetadata, TopicMetadata } from '@spool/protocol';
import { adminHandlers } from '../admin-handlers';
import type { MetadataLink } from '../metadata-link';

/** The node id every gateway answers as. */
export const gatewayNodeId = 0;

export interface KafkaAdvertisedAddress {
  readonly host: string;
  readonly port: number;
}

/** A 16-byte UUID of Kafka's wire from its text form; the zero UUID when it is not one. */
export function uuidBytesOf(text: string): Buffer {
  const hex = text.replace(/-/g, '');
  return /^[0-9a-fA-F]{32}$/.test(hex) ? Buffer.from(hex, 'hex') : Buffer.alloc(16);
}

export class KafkaClusterView {
  /** Topic names by topic id (hex, no dashes), rebuilt when the metadata version moves. */
  private namesById = new Map<string, string>();
  private namesByIdVersion = -1n;
  private clusterIdValue: string | null = null;

  constructor(
    readonly link: MetadataLink,
    private readonly advertised: () => KafkaAdvertisedAddress,
  ) {}

  get address(): KafkaAdvertisedAddress {
    return this.advertised();
  }

  /** The cluster id once the controller told it (DescribeCluster), else null. */
  get clusterId(): string | null {
    return this.clusterIdValue;
  }

  /** Asks the controller for the cluster id once; Metadata answers null until it is known. */
  learnClusterId(logger: Logger): void {
    adminHandlers(this.link)
      .describeCluster({})
      .then(
        (answer) => {
          this.clusterIdValue = answer.clusterId === '' ? null : answer.clusterId;
        },
        (error: unknown) =>
          logger.warn({ err: error }, 'the cluster id is unknown: Metadata answers it as null'),
      );
  }

  /** The brokers as Kafka's Metadata lists them: this gateway, as node 0. */
  brokers(): Array<{ nodeId: number; host: string; port: number; rack: string | null }> {
    const { host, port } = this.advertised();
    return [{ nodeId: gatewayNodeId, host, port, rack: null }];
  }

  isAlive(brokerId: number): boolean {
    const broker: BrokerMetadata | undefined = this.link.metadata.brokers.get(brokerId);
    return broker !== undefined && broker.state !== 'FENCED';
  }

  topic(name: string): TopicMetadata | undefined {
    return this.link.metadata.topics.get(name);
  }

  /** The 16-byte id of the topic with this name; the zero UUID for a topic it does not know. */
  topicIdOf(name: string): Buffer {
    const topic = this.link.metadata.topics.get(name);
    return topic === undefined ? Buffer.alloc(16) : uuidBytesOf(topic.topicId);
  }

  /** The name of the topic with this 16-byte id, or undefined. */
  topicNameOf(topicId: Buffer): string | undefined {
    const metadata = this.link.metadata;
    if (this.namesByIdVersion !== metadata.version) {
      this.namesById = new Map(
        [...metadata.topics.values()].map((topic) => [
          uuidBytesOf(topic.topicId).toString('hex'),
          topic.name,
        ]),
      );
      this.namesByIdVersion = metadata.version;
    }
    return this.namesById.get(topicId.toString('hex'));
  }
}

/**
 * The cluster as Kafka clients are shown it through this gateway (docs/kafka-protocol.md): the
 * storage brokers, by their own ids, racks and fencing, each at an address of this gateway's
 * Kafka listener (kafka-broker-ports.ts); every partition's real leader, leader epoch, replicas
 * and ISR; the controller's topic ids. A client that connects to "broker 2" reaches a gateway,
 * which serves any partition and group whoever leads it, so the broker a client picks from this
 * view only decides which of its connections a request takes.
 *
 * 1. Listed brokers: those registered and not fenced (Kafka's Metadata lists live brokers only;
 *    DescribeCluster v2 adds the fenced ones when asked) that have a port here.
 * 2. A partition's leader is shown when it has one, is not offline and is listed; otherwise the
 *    partition answers LEADER_NOT_AVAILABLE with leader -1, as Kafka does while it elects.
 * 3. The controller id clients are told is the lowest listed broker id: Kafka's admin client
 *    sends some requests to the controller, and any gateway serves them (it forwards to Spool's
 *    own controller, which is no storage broker).
 * 4. A group's coordinator is a listed broker chosen by a hash of the group id, the same on every
 *    gateway while the brokers stay, so groups spread over the connections clients keep.
 */
import type { Logger } from '@spool/common';
import type { BrokerMetadata, PartitionMetadata, TopicMetadata } from '@spool/protocol';
import { adminHandlers } from '../admin-handlers';
import type { MetadataLink } from '../metadata-link';
import type { KafkaBrokerAddresses } from './kafka-broker-ports';

/** The broker id Kafka answers when there is none (no leader, no controller known). */
export const noBrokerId = -1;

/** A broker as Metadata and DescribeCluster list it. */
export interface KafkaBroker {
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
  readonly rack: string | null;
  readonly fenced: boolean;
}

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
    private readonly addresses: KafkaBrokerAddresses,
  ) {}

  /** Opens a port for every broker in the metadata; awaited before an answer lists brokers. */
  prepare(): Promise<void> {
    return this.addresses.ensure([...this.link.metadata.brokers.keys()]);
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

  /** Point 1: the listed brokers by id, the fenced ones too when asked. */
  brokers(includeFenced = false): KafkaBroker[] {
    const brokers: KafkaBroker[] = [];
    for (const broker of this.link.metadata.brokers.values()) {
      const fenced = broker.state === 'FENCED';
      if (fenced && !includeFenced) continue;
      const address = this.addresses.addressOf(broker.brokerId);
      if (address === undefined) continue;
      brokers.push({
        nodeId: broker.brokerId,
        host: address.host,
        port: address.port,
        rack: broker.rack === '' ? null : broker.rack,
        fenced,
      });
    }
    return brokers.sort((left, right) => left.nodeId - right.nodeId);
  }

  /** A listed (point 1) broker by id, or undefined. */
  listedBroker(brokerId: number): KafkaBroker | undefined {
    if (!this.isAlive(brokerId)) return undefined;
    const address = this.addresses.addressOf(brokerId);
    if (address === undefined) return undefined;
    const rack = this.link.metadata.brokers.get(brokerId)!.rack;
    return { nodeId: brokerId, ...address, rack: rack === '' ? null : rack, fenced: false };
  }

  /** Point 2: the leader clients are shown, or noBrokerId. */
  leaderOf(partition: PartitionMetadata): number {
    const led =
      partition.leaderId >= 0 &&
      !partition.offline &&
      this.listedBroker(partition.leaderId) !== undefined;
    return led ? partition.leaderId : noBrokerId;
  }

  /** Point 3. */
  controllerId(): number {
    return this.brokers()[0]?.nodeId ?? noBrokerId;
  }

  /** Point 4: the broker that answers for a group, or undefined while none is listed. */
  coordinatorOf(key: string): KafkaBroker | undefined {
    const brokers = this.brokers();
    if (brokers.length === 0) return undefined;
    return brokers[hashOf(key) % brokers.length];
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

/** A non-negative 31-bit FNV-1a hash of a string's UTF-16 code units: the same on every gateway. */
function hashOf(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193);
  }
  return (hash >>> 0) & 0x7fffffff;
}

/**
 * A port of this gateway's Kafka listener per storage broker, so that every broker id Kafka
 * clients are shown (kafka-cluster-view.ts) has an address of its own: librdkafka (kcat,
 * confluent-kafka) keys brokers by host and port and folds brokers that share an address into
 * one, so the partitions led by the others would never be fetched (docs/kafka-protocol.md). Every
 * port serves every partition and group alike; the port only gives the client one connection per
 * broker id, as it keeps with Kafka (the same routing as Confluent's port-based access).
 *
 * 1. Broker N listens on kafka.broker.port.base + N, or on a free port when the base is 0 (one
 *    host: `spool dev`, the tests). Clients are told kafka.advertised.broker.port.base + N when
 *    that is set (a load balancer or node ports that map ports), else the bound port.
 * 2. A broker's port is opened when the broker first shows in the metadata, and before any
 *    answer names it (ensure() is awaited by Metadata, DescribeCluster and FindCoordinator). It
 *    stays open while the gateway runs: a broker that leaves and returns keeps its port, and a
 *    client still connected to a broker that left keeps reaching a gateway that serves it.
 * 3. A port that cannot be bound (in use, past 65535) is logged; the broker is not listed (its
 *    partitions answer LEADER_NOT_AVAILABLE) and the port is tried again at most every
 *    bindRetryIntervalMs, so a client's Metadata refresh does not retry a bind each time.
 */
import { ConfigError, type Logger } from '@spool/common';
import type { KafkaAdvertisedAddress } from './kafka-cluster-view';
import type { KafkaListener } from './kafka-listener';

/** How often a broker port that failed to bind is tried again. */
const bindRetryIntervalMs = 5_000;
/** Broker ports one gateway opens at most: a port each, so a bound on file descriptors too. */
export const brokerPortsMax = 1_024;
const portMax = 65_535;

export interface KafkaBrokerPortSettings {
  /** The interface the listener binds (the gateway's host setting). */
  readonly host: string;
  readonly kafkaBrokerPortBase: number;
  readonly kafkaAdvertisedBrokerPortBase: number;
}

/**
 * Checked once at start-up: with a fixed base, the bootstrap port must not be one a broker would
 * take (base up to base + brokerPortsMax), or that broker could never be listed.
 */
export function checkKafkaBrokerPortBase(config: {
  readonly kafkaPort: number;
  readonly kafkaBrokerPortBase: number;
}): void {
  const base = config.kafkaBrokerPortBase;
  if (base === 0 || config.kafkaPort === 0) return;
  const brokerId = config.kafkaPort - base;
  if (brokerId >= 0 && brokerId < brokerPortsMax) {
    throw new ConfigError(
      `kafka.port ${config.kafkaPort} is broker ${brokerId}'s port under ` +
        `kafka.broker.port.base ${base} (broker N listens on the base + N): move one of them`,
    );
  }
}

/** Where clients are told each broker is. */
export interface KafkaBrokerAddresses {
  /** The advertised address of storage broker `brokerId`, undefined while it has no port. */
  addressOf(brokerId: number): KafkaAdvertisedAddress | undefined;
  /** Opens a port for each of `brokerIds` that has none (point 2); never rejects. */
  ensure(brokerIds: readonly number[]): Promise<void>;
}

export class KafkaBrokerPorts implements KafkaBrokerAddresses {
  private readonly bound = new Map<number, number>();
  private readonly binding = new Map<number, Promise<void>>();
  private readonly failedAtMs = new Map<number, number>();

  constructor(
    private readonly listener: KafkaListener,
    private readonly settings: KafkaBrokerPortSettings,
    private readonly advertisedHost: () => string,
    private readonly logger: Logger,
  ) {}

  addressOf(brokerId: number): KafkaAdvertisedAddress | undefined {
    const port = this.bound.get(brokerId);
    if (port === undefined) return undefined;
    const advertisedBase = this.settings.kafkaAdvertisedBrokerPortBase;
    return {
      host: this.advertisedHost(),
      port: advertisedBase === 0 ? port : advertisedBase + brokerId,
    };
  }

  async ensure(brokerIds: readonly number[]): Promise<void> {
    const nowMs = Date.now();
    const waits: Promise<void>[] = [];
    for (const brokerId of brokerIds) {
      if (this.bound.has(brokerId)) continue;
      const pending = this.binding.get(brokerId);
      if (pending !== undefined) {
        waits.push(pending);
        continue;
      }
      // Point 3.
      if (nowMs - (this.failedAtMs.get(brokerId) ?? -Infinity) < bindRetryIntervalMs) continue;
      const bind = this.bind(brokerId).finally(() => this.binding.delete(brokerId));
      this.binding.set(brokerId, bind);
      waits.push(bind);
    }
    await Promise.all(waits);
  }

  private async bind(brokerId: number): Promise<void> {
    const base = this.settings.kafkaBrokerPortBase;
    const port = base === 0 ? 0 : base + brokerId;
    try {
      if (this.bound.size >= brokerPortsMax) {
        throw new Error(`this gateway already listens for ${brokerPortsMax} brokers`);
      }
      if (port > portMax) {
        throw new Error(
          `kafka.broker.port.base ${base} + broker id ${brokerId} is past ${portMax}`,
        );
      }
      const boundPort = await this.listener.listen(
        this.settings.host,
        port,
        'kafka.broker.port.base',
        brokerId,
      );
      this.bound.set(brokerId, boundPort);
      this.failedAtMs.delete(brokerId);
      this.logger.info({ brokerId, port: boundPort }, 'Kafka port open for a storage broker');
    } catch (error) {
      this.failedAtMs.set(brokerId, Date.now());
      this.logger.error(
        { err: error, brokerId, port },
        'cannot listen for Kafka clients of a broker: it is not listed until it can',
      );
    }
  }
}

/**
 * Addresses without ports of their own, for unit tests that need no listener: broker N at
 * `port + 1 + N` of `host`.
 */
export function fixedBrokerAddresses(host: string, port: number): KafkaBrokerAddresses {
  return {
    addressOf: (brokerId) => ({ host, port: port + 1 + brokerId }),
    ensure: async () => undefined,
  };
}

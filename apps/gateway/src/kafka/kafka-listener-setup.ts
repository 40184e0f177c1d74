/**
 * Starts the gateway's Kafka listener inside the gateway's start-up: binds --kafka-port, logs
 * the bound port (`spool dev` reads it into cluster.json as ports.kafka), and stops it first at
 * shutdown, before gRPC drains, so Kafka clients move to another gateway as gRPC clients do.
 */
import type { Logger } from '@spool/common';
import type { Registry } from 'prom-client';
import type { KafkaRequestHandler } from './kafka-connection';
import { KafkaListener } from './kafka-listener';
import { KafkaListenerMetrics } from './kafka-listener-metrics';

/** How long open Kafka connections get at shutdown to receive the answers in flight. */
const kafkaDrainTimeoutMs = 5_000;

export interface KafkaListenerSettings {
  readonly host: string;
  readonly kafkaPort: number;
  readonly kafkaSocketRequestMaxBytes: number;
  readonly kafkaInFlightRequestsMax: number;
  readonly kafkaQueuedMaxRequestBytes: number;
}

export interface StartedKafkaListener {
  readonly listener: KafkaListener;
  readonly port: number;
}

export async function startKafkaListener(
  config: KafkaListenerSettings,
  services: {
    readonly logger: Logger;
    readonly metrics: Registry;
    readonly handler: KafkaRequestHandler;
    readonly onShutdown: (step: () => Promise<void>) => void;
  },
): Promise<StartedKafkaListener> {
  const holder: { listener?: KafkaListener } = {};
  const listener = new KafkaListener({
    logger: services.logger,
    handler: services.handler,
    metrics: new KafkaListenerMetrics(
      services.metrics,
      () => holder.listener?.connectionCount ?? 0,
    ),
    requestBytesMax: config.kafkaSocketRequestMaxBytes,
    inFlightRequestsMax: config.kafkaInFlightRequestsMax,
    queuedBytesMax: config.kafkaQueuedMaxRequestBytes,
  });
  holder.listener = listener;
  // Registered before listening: a start-up that fails later still closes the port.
  services.onShutdown(() => listener.close(kafkaDrainTimeoutMs));
  const port = await listener.listen(config.host, config.kafkaPort);
  services.logger.info({ kafkaPort: port }, 'Kafka listener listening');
  return { listener, port };
}

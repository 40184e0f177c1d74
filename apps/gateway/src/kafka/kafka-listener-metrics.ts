import { Counter, Gauge, type Registry } from 'prom-client';

/**
 * The Kafka listener's own series, beside the common spool_request* ones in which each Kafka
 * request counts under its API's name with a `Kafka` prefix (KafkaProduce, KafkaFetch, ...):
 * Kafka's socket-server metrics (connection-count, connection-creation-total) by the names a
 * Kafka exporter gives them.
 */
export class KafkaListenerMetrics {
  readonly connectionsAccepted: Counter;
  readonly connectionsRefused: Counter;

  constructor(registry: Registry, connectionCount: () => number) {
    this.connectionsAccepted = new Counter({
      name: 'spool_kafka_connection_creation_total',
      help: 'Kafka client connections accepted.',
      registers: [registry],
    });
    this.connectionsRefused = new Counter({
      name: 'spool_kafka_connections_refused_total',
      help:
        'Kafka connections closed because of a request that could not be served: oversized or ' +
        'malformed, an unknown API key, an unsupported version.',
      registers: [registry],
    });
    new Gauge({
      name: 'spool_kafka_connection_count',
      help: 'Kafka client connections open.',
      registers: [registry],
      collect() {
        this.set(connectionCount());
      },
    });
  }
}

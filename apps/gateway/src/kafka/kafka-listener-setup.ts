/**
 * Starts the gateway's Kafka listener inside the gateway's start-up: binds --kafka-port, logs
 * the bound port (`spool dev` reads it into cluster.json as ports.kafka), and stops it first at
 * shutdown, before gRPC drains, so Kafka clients move to another gateway as gRPC clients do.
 *
 * Its security protocol (kafka.security.protocol, Kafka's names): PLAINTEXT; SSL (TLS with the
 * process's certificate; client certificates as kafka.ssl.client.auth says, none by default,
 * kafka-ssl-client-auth.ts); and SASL_PLAINTEXT and SASL_SSL, the same with SASL
 * authentication first (kafka-sasl.ts).
 */
import { ConfigError, type Logger, type TransportSecurity } from '@spool/common';
import { saslMechanisms, type SaslMechanism } from '../security/client-authenticator';
import type { Registry } from 'prom-client';
import type { KafkaRequestHandler } from './kafka-connection';
import { KafkaListener } from './kafka-listener';
import { KafkaListenerMetrics } from './kafka-listener-metrics';
import { kafkaSslClientAuths, type KafkaSslClientAuth } from './kafka-ssl-client-auth';

/** How long open Kafka connections get at shutdown to receive the answers in flight. */
const kafkaDrainTimeoutMs = 5_000;

export interface KafkaListenerSettings {
  readonly host: string;
  readonly kafkaPort: number;
  readonly kafkaSocketRequestMaxBytes: number;
  readonly kafkaInFlightRequestsMax: number;
  readonly kafkaQueuedMaxRequestBytes: number;
  readonly kafkaSecurityProtocol: string;
  readonly kafkaSaslEnabledMechanisms: readonly string[];
  readonly kafkaSslClientAuth: string;
}

export type KafkaSecurityProtocol = 'PLAINTEXT' | 'SSL' | 'SASL_PLAINTEXT' | 'SASL_SSL';

export interface KafkaListenerSecurity {
  readonly protocol: KafkaSecurityProtocol;
  /** TLS material for SSL and SASL_SSL. */
  readonly tls: TransportSecurity | undefined;
  readonly saslMechanisms: readonly SaslMechanism[];
  /** Client certificates on SSL and SASL_SSL; always none on the others. */
  readonly sslClientAuth: KafkaSslClientAuth;
}

/** The listener's protocol from the settings, checked once at start-up (ConfigError). */
export function kafkaListenerSecurityOf(
  config: Pick<
    KafkaListenerSettings,
    'kafkaSecurityProtocol' | 'kafkaSaslEnabledMechanisms' | 'kafkaSslClientAuth'
  >,
  transportSecurity: TransportSecurity | undefined,
): KafkaListenerSecurity {
  const protocol = (config.kafkaSecurityProtocol ||
    (transportSecurity === undefined ? 'PLAINTEXT' : 'SSL')) as KafkaSecurityProtocol;
  const usesTls = protocol === 'SSL' || protocol === 'SASL_SSL';
  if (usesTls && transportSecurity === undefined) {
    throw new ConfigError(
      `kafka.security.protocol=${protocol} needs TLS material: set security.protocol=SSL and ` +
        'ssl.certificate.location, ssl.key.location',
    );
  }
  const sslClientAuth = kafkaSslClientAuths.find((known) => known === config.kafkaSslClientAuth);
  if (sslClientAuth === undefined) {
    throw new ConfigError(
      `invalid value for setting kafka.ssl.client.auth: ${config.kafkaSslClientAuth}; expected ` +
        kafkaSslClientAuths.join(', '),
    );
  }
  if (sslClientAuth !== 'none' && !usesTls) {
    throw new ConfigError(
      `invalid value for setting kafka.ssl.client.auth: ${sslClientAuth} needs a TLS Kafka ` +
        `listener, but kafka.security.protocol is ${protocol}; use SSL or SASL_SSL`,
    );
  }
  const mechanisms: SaslMechanism[] = [];
  for (const name of config.kafkaSaslEnabledMechanisms) {
    const mechanism = saslMechanisms.find((known) => known === name);
    if (mechanism === undefined) {
      throw new ConfigError(
        `invalid value for setting kafka.sasl.enabled.mechanisms: ${name}; expected ` +
          saslMechanisms.join(', '),
      );
    }
    mechanisms.push(mechanism);
  }
  const usesSasl = protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL';
  if (usesSasl && mechanisms.length === 0) {
    throw new ConfigError(
      `kafka.security.protocol=${protocol} needs kafka.sasl.enabled.mechanisms`,
    );
  }
  return {
    protocol,
    tls: usesTls ? transportSecurity : undefined,
    saslMechanisms: usesSasl ? mechanisms : [],
    sslClientAuth,
  };
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
    readonly security: KafkaListenerSecurity;
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
    tls: services.security.tls,
    sslClientAuth: services.security.sslClientAuth,
    authenticationRequired: services.security.saslMechanisms.length > 0,
  });
  holder.listener = listener;
  // Registered before listening: a start-up that fails later still closes the port.
  services.onShutdown(() => listener.close(kafkaDrainTimeoutMs));
  const port = await listener.listen(config.host, config.kafkaPort);
  services.logger.info(
    {
      kafkaPort: port,
      securityProtocol: services.security.protocol,
      sslClientAuth: services.security.sslClientAuth,
      saslMechanisms: services.security.saslMechanisms,
    },
    'Kafka listener listening',
  );
  return { listener, port };
}

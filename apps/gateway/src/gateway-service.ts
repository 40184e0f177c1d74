import { RequestAuthorizer, authorizerSettings } from '@spool/authorizer';
import {
  ConfigError,
  SpoolError,
  createGrpcClient,
  startService,
  type RunningService,
  type SettingsSchema,
} from '@spool/common';
import { Spool } from '@spool/client';
import {
  GatewayServiceService,
  RecordServiceService,
  StorageServiceClient,
  protoDescriptorSetPath,
} from '@spool/protocol';
import { aclHandlers } from './acl-handlers';
import { AppendPipeline } from './append-pipeline';
import { BrokerResources } from './broker-resources';
import { ConsumeStreams } from './consume-streams';
import { CoordinatorRouter } from './coordinator-router';
import { gatewayHandlers } from './gateway-handlers';
import { groupHandlers } from './group-handlers';
import { authorizedHandlers } from './grpc-authorization';
import { createKafkaApis } from './kafka/kafka-apis';
import { createKafkaFetchSessions } from './kafka/kafka-fetch-sessions';
import { KafkaBrokerPorts, checkKafkaBrokerPortBase } from './kafka/kafka-broker-ports';
import { KafkaClusterView } from './kafka/kafka-cluster-view';
import { kafkaListenerSecurityOf, startKafkaListener } from './kafka/kafka-listener-setup';
import { ClientAuthenticator } from './security/client-authenticator';
import { grpcAuthentications, grpcCallAuthenticator } from './security/grpc-authentication';
import { GatewayMetrics } from './gateway-metrics';
import { LeaderFetcher } from './leader-fetcher';
import { createMetadataLink } from './metadata-link';
import { ProduceAdmission } from './produce-admission';
import { produceStreams as createProduceStreams } from './produce-streams';
import { RecordPublisher } from './record-publisher';
import { recordHandlers } from './record-service';
import { RecordSubscriptions } from './record-subscriptions';

/**
 * The gateway service: the stateless front door. It routes produce requests to partition
 * leaders, reads from their data ports for Fetch and Consume, and fronts the controller's admin
 * calls and the coordinators' group calls. Its only state is a copy of the
 * cluster metadata, followed from the active controller.
 */
export const gatewaySettings = {
  ...authorizerSettings,
  controllerAddresses: {
    type: 'list',
    default: ['127.0.0.1:9093'],
    description: 'Controller gRPC addresses (host:port); any of them, the active one is found.',
  },
  produceInFlightBytesMax: {
    type: 'integer',
    default: 64 * 1024 * 1024,
    min: 1024,
    max: 1024 * 1024 * 1024,
    description:
      'Record bytes one client connection may have in produce requests not yet answered; ' +
      'beyond it a produce gets THROTTLING_QUOTA_EXCEEDED (retriable).',
  },
  fetchMaxBytes: {
    type: 'integer',
    default: 32 * 1024 * 1024,
    min: 1024,
    max: 512 * 1024 * 1024,
    description:
      'Record bytes in one Fetch response or one Consume push, at most (fetch.max.bytes); ' +
      'a first batch larger than this still comes whole.',
  },
  consumeCreditBytesMax: {
    type: 'integer',
    default: 256 * 1024 * 1024,
    min: 1024,
    max: 2 ** 40,
    description:
      'Credit a Consume stream may hold granted and not yet used; a larger grant ends the ' +
      'stream with INVALID_REQUEST.',
  },
  consumeStreamsMax: {
    type: 'integer',
    default: 1_024,
    min: 1,
    max: 1_000_000,
    description: 'Consume streams open at once; more get THROTTLING_QUOTA_EXCEEDED (retriable).',
  },
  publishBufferMemoryBytes: {
    type: 'integer',
    default: 32 * 1024 * 1024,
    min: 1024 * 1024,
    max: 1024 * 1024 * 1024,
    description:
      "Record bytes each of the record-level API's producers may hold unsent (Kafka's " +
      'buffer.memory); one Publish call must fit in it (else RECORD_LIST_TOO_LARGE).',
  },
  publishIdempotencyWindowMs: {
    type: 'integer',
    default: 300_000,
    min: 1_000,
    max: 86_400_000,
    description:
      'How long a Publish idempotency key is remembered after its last use: a retry within ' +
      'it is answered from the first call instead of appending again.',
  },
  publishIdempotencyKeysMax: {
    type: 'integer',
    default: 10_000,
    min: 1,
    max: 10_000_000,
    description: 'Publish idempotency keys remembered at most; past it the oldest are forgotten.',
  },
  publishStreamInFlightMax: {
    type: 'integer',
    default: 64,
    min: 1,
    max: 10_000,
    description:
      'Requests of one PublishStream unanswered at once; at the bound the gateway stops ' +
      'reading the stream until one is answered.',
  },
  kafkaPort: {
    type: 'integer',
    default: 9092,
    min: 0,
    max: 65535,
    description:
      'Port of the Kafka protocol listener, where Kafka clients bootstrap (bootstrap.servers); ' +
      '0 picks a free one.',
  },
  kafkaAdvertisedHost: {
    type: 'string',
    default: '',
    description:
      "Host Kafka clients are told to connect to (Kafka's advertised.listeners): the name of " +
      'the Service or load balancer in front of the gateways; empty means advertised.host.',
  },
  kafkaBrokerPortBase: {
    type: 'integer',
    default: 0,
    min: 0,
    max: 65535,
    description:
      'Kafka clients see each storage broker at a port of its own on every gateway: broker N ' +
      'at this base + N; 0 picks a free port per broker (one host, as spool dev).',
  },
  kafkaAdvertisedBrokerPortBase: {
    type: 'integer',
    default: 0,
    min: 0,
    max: 65535,
    description:
      'Kafka clients are told broker N is at this base + N (a load balancer or node ports ' +
      'that map ports); 0 means the bound port of each broker.',
  },
  kafkaSocketRequestMaxBytes: {
    type: 'integer',
    default: 100 * 1024 * 1024,
    min: 1024,
    max: 1024 * 1024 * 1024,
    description:
      "Largest Kafka request accepted (Kafka's socket.request.max.bytes); a larger size " +
      'prefix closes the connection before anything is allocated for it.',
  },
  kafkaInFlightRequestsMax: {
    type: 'integer',
    default: 32,
    min: 1,
    max: 10_000,
    description:
      'Requests of one Kafka connection read and not yet answered; at the bound the gateway ' +
      'stops reading the connection until one is answered.',
  },
  kafkaQueuedMaxRequestBytes: {
    type: 'integer',
    default: 64 * 1024 * 1024,
    min: 1024,
    max: 4 * 1024 * 1024 * 1024,
    description:
      "Bytes one Kafka connection may hold (Kafka's queued.max.request.bytes): its requests " +
      'read and not yet answered, their responses and the response bytes not yet sent; at the ' +
      'bound the gateway stops reading the connection. A single larger request is still read ' +
      'when nothing else is in flight.',
  },
  kafkaMaxIncrementalFetchSessionCacheSlots: {
    type: 'integer',
    default: 1_000,
    min: 0,
    max: 1_000_000,
    description:
      "Kafka fetch sessions (KIP-227) this gateway keeps (Kafka's " +
      'max.incremental.fetch.session.cache.slots); 0 creates none, so every fetch is full.',
  },
  kafkaSecurityProtocol: {
    type: 'string',
    default: '',
    choices: ['', 'PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'],
    description:
      "The Kafka listener's security.protocol (Kafka's listener.security.protocol.map): SSL " +
      'and SASL_SSL use the ssl.* files of security.protocol=SSL; SASL_* require SASL ' +
      'authentication against the users of `spool user`. Empty: PLAINTEXT, or SSL when ' +
      'security.protocol is SSL.',
  },
  kafkaSslClientAuth: {
    type: 'string',
    default: 'none',
    choices: ['none', 'requested', 'required'],
    description:
      "Client certificates on an SSL or SASL_SSL Kafka listener (Kafka's ssl.client.auth): " +
      'required refuses a client without one that verifies against ssl.ca.location at the TLS ' +
      'handshake; requested asks, refuses one that does not verify, and serves a client ' +
      'without one as User:ANONYMOUS; a verified certificate is User:<its subject, RFC 2253> ' +
      "(Kafka's default ssl.principal.mapping.rules), e.g. User:CN=alice,OU=payments,O=Example.",
  },
  grpcAuthentication: {
    type: 'string',
    default: 'none',
    choices: grpcAuthentications,
    description:
      'none: gRPC calls are User:ANONYMOUS; required: each call carries a user and password ' +
      "(the SDK's sasl option) checked against the users of `spool user`, else UNAUTHENTICATED; " +
      'needs security.protocol=SSL (the gateway refuses to start on a plaintext gRPC port).',
  },
  kafkaSaslEnabledMechanisms: {
    type: 'list',
    default: ['SCRAM-SHA-512', 'SCRAM-SHA-256', 'PLAIN'],
    description:
      "SASL mechanisms of a SASL_* Kafka listener (Kafka's sasl.enabled.mechanisms): " +
      'SCRAM-SHA-256, SCRAM-SHA-512, PLAIN (checked against the same SCRAM credentials).',
  },
  subscribeStreamsMax: {
    type: 'integer',
    default: 1_024,
    min: 1,
    max: 1_000_000,
    description: 'Subscribe streams open at once; more get THROTTLING_QUOTA_EXCEEDED (retriable).',
  },
} as const satisfies SettingsSchema;

export const gatewayDefaultPorts = { grpcPort: 9090, metricsPort: 9190 } as const;

export function startGateway(
  options: {
    argv?: readonly string[];
    env?: Record<string, string | undefined>;
    handleSignals?: boolean;
  } = {},
): Promise<RunningService> {
  return startService({
    name: 'gateway',
    settings: gatewaySettings,
    defaultPorts: gatewayDefaultPorts,
    descriptorSetPaths: [protoDescriptorSetPath],
    ...options,
    setup: async (context) => {
      const { config, logger, metrics, readiness, grpc } = context;
      // A response must fit in one gRPC message with room for its first batch (KIP-74).
      if (config.fetchMaxBytes * 2 > config.grpcMaxMessageBytes) {
        throw new ConfigError(
          `invalid value for setting fetch.max.bytes: ${config.fetchMaxBytes}; it must be at ` +
            `most half of grpc.max.message.bytes (${config.grpcMaxMessageBytes})`,
        );
      }
      // Under TLS (security.protocol=SSL) every connection this gateway opens presents its
      // service certificate: to controllers, leaders' gRPC and data ports, coordinators.
      const security = context.transportSecurity;
      // Credentials travel with every call and grpc-js sends them over TLS only, and a plaintext
      // port sees no client certificate: required authentication there would refuse every call
      // while looking secure. No override: there is no safe way to send a password in cleartext.
      if (config.grpcAuthentication === 'required' && security === undefined) {
        throw new ConfigError(
          'invalid value for setting grpc.authentication: required needs TLS on the gRPC port, ' +
            'but security.protocol is PLAINTEXT; set security.protocol=SSL with ' +
            'ssl.certificate.location and ssl.key.location, or grpc.authentication=none',
        );
      }
      const link = createMetadataLink(
        config.controllerAddresses,
        logger.child({ component: 'metadata' }),
        security,
      );
      // Per leader: its gRPC client, and the append stream produces are pipelined on.
      const storageClients = new BrokerResources(
        link.metadata,
        'grpc',
        (host, port) => {
          const client = createGrpcClient(
            StorageServiceClient,
            `${host}:${port}`,
            {},
            security?.channelCredentials(),
          );
          return { client, appends: new AppendPipeline(client, `leader ${host}:${port}`) };
        },
        ({ client, appends }) => {
          appends.close();
          client.close();
        },
      );
      // ACLs (authorizer acl): decided here from the copy the metadata stream keeps current.
      const authorizer = new RequestAuthorizer({
        enabled: config.authorizer === 'acl',
        superUsers: config.superUsers,
        allowEveryoneIfNoAclFound: config.allowEveryoneIfNoAclFound,
        logger: logger.child({ component: 'authorizer' }),
        metrics,
      });
      link.metadata.onChange((change) => {
        if (change.aclsChanged) authorizer.replaceAcls(link.metadata.acls);
      });
      const acls = aclHandlers(link, authorizer);
      const fetcher = new LeaderFetcher(link.metadata, security);
      const coordinators = new CoordinatorRouter(link, security);
      const admission = new ProduceAdmission(config.produceInFlightBytesMax);
      const consumeStreamsHolder: { streams?: ConsumeStreams } = {};
      const gatewayMetrics = new GatewayMetrics(metrics, {
        server: grpc.server,
        produceInFlightBytes: () => admission.inFlightBytes,
        consumeStreams: () => consumeStreamsHolder.streams?.count ?? 0,
      });
      const consumeStreams = new ConsumeStreams(config.consumeStreamsMax, {
        link,
        fetcher,
        fetchMaxBytes: config.fetchMaxBytes,
        consumeCreditBytesMax: config.consumeCreditBytesMax,
        logger: logger.child({ component: 'consume' }),
        onPartitionError: (code) => context.requestMetrics.errors.inc({ api: 'Consume', code }),
        onBytesPushed: (sizeBytes) => gatewayMetrics.consumeBytes.inc(sizeBytes),
        onFetchServed: (durationSeconds) =>
          context.requestMetrics.durationSeconds.observe({ api: 'Consume' }, durationSeconds),
      });
      consumeStreamsHolder.streams = consumeStreams;
      const produceStreams = createProduceStreams(
        {
          link,
          appendPipeline: (brokerId) => storageClients.get(brokerId)?.appends,
          admission,
          logger,
        },
        context.requestMetrics,
        logger.child({ component: 'produce' }),
      );
      const authenticator = new ClientAuthenticator(
        link.metadata.users,
        logger.child({ component: 'authentication' }),
        metrics,
      );
      const grpcAuthentication =
        config.grpcAuthentication === 'required'
          ? {
              authenticate: grpcCallAuthenticator(
                authenticator,
                security?.clientAuthentication === 'required',
              ),
            }
          : {};
      grpc.addService(
        GatewayServiceService,
        gatewayHandlers({
          link,
          storageClient: (brokerId) => storageClients.get(brokerId)?.client,
          appendPipeline: (brokerId) => storageClients.get(brokerId)?.appends,
          coordinators,
          fetcher,
          admission,
          consumeStreams,
          produceStreams,
          fetchMaxBytes: config.fetchMaxBytes,
          logger,
          authorizer,
          acls,
        }),
        grpcAuthentication,
      );

      // The Kafka listener: the same routes, leaders and coordinators as the gRPC calls above.
      const kafkaBrokerAddresses: { current?: KafkaBrokerPorts } = {};
      const kafkaView = new KafkaClusterView(link, {
        addressOf: (brokerId) => kafkaBrokerAddresses.current?.addressOf(brokerId),
        ensure: async (brokerIds) => kafkaBrokerAddresses.current?.ensure(brokerIds),
      });
      const storageClient = (brokerId: number) => storageClients.get(brokerId)?.client;
      const kafkaSecurity = kafkaListenerSecurityOf(config, security);
      checkKafkaBrokerPortBase(config);
      const kafka = await startKafkaListener(config, {
        logger,
        metrics,
        security: kafkaSecurity,
        onShutdown: (step) => context.onShutdown(step),
        handler: createKafkaApis({
          view: kafkaView,
          produce: {
            link,
            appendPipeline: (brokerId) => storageClients.get(brokerId)?.appends,
            admission,
            logger,
          },
          fetch: { link, fetcher, fetchMaxBytes: config.fetchMaxBytes },
          offsets: { link, storageClient },
          fetchSessions: createKafkaFetchSessions(
            metrics,
            config.kafkaMaxIncrementalFetchSessionCacheSlots,
          ),
          coordinators: groupHandlers(coordinators),
          requestMetrics: context.requestMetrics,
          logger: logger.child({ component: 'kafka' }),
          acls: { authorizer, handlers: acls },
          sasl: { authenticator, enabledMechanisms: kafkaSecurity.saslMechanisms },
        }),
      });
      kafkaBrokerAddresses.current = new KafkaBrokerPorts(
        kafka.listener,
        config,
        () =>
          config.kafkaAdvertisedHost !== '' ? config.kafkaAdvertisedHost : context.advertisedHost,
        logger.child({ component: 'kafka' }),
      );

      // The record-level API runs the SDK inside the gateway, connected to the gateway itself
      // once it listens: its partitioner, batching, idempotent producer and group membership
      // are the SDK's own.
      let spool: Spool | undefined;
      const gatewaySdk = (): Spool => {
        if (spool === undefined) {
          throw new SpoolError('UNAVAILABLE', 'the gateway is starting', { retriable: true });
        }
        return spool;
      };
      const recordPublisher = new RecordPublisher({
        link,
        spool: gatewaySdk,
        bufferMemoryBytes: config.publishBufferMemoryBytes,
        idempotencyWindowMs: config.publishIdempotencyWindowMs,
        idempotencyKeysMax: config.publishIdempotencyKeysMax,
      });
      const recordSubscriptions = new RecordSubscriptions({
        link,
        spool: gatewaySdk,
        streamsMax: config.subscribeStreamsMax,
        logger: logger.child({ component: 'subscribe' }),
      });
      grpc.addService(
        RecordServiceService,
        // The record-level API acts through the gateway's own SDK, as the gateway: under an
        // authorizer only principals that may ALTER the cluster use it (grpc-authorization.ts).
        authorizedHandlers(
          recordHandlers({
            publisher: recordPublisher,
            subscriptions: recordSubscriptions,
            publishStreamInFlightMax: config.publishStreamInFlightMax,
          }),
          authorizer,
        ),
        grpcAuthentication,
      );
      context.afterListen(async ({ grpcPort }) => {
        const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
        spool = new Spool({
          brokers: [`${host}:${grpcPort}`],
          clientId: 'gateway-record-api',
          logger: logger.child({ component: 'record-api' }),
        });
      });

      readiness.require('metadata');
      link.start();
      void link.firstSnapshotApplied.then(() => {
        readiness.satisfy('metadata');
        kafkaView.learnClusterId(logger);
        logger.info(
          {
            metadataVersion: link.metadata.version.toString(),
            brokers: link.metadata.brokers.size,
            topics: link.metadata.topics.size,
          },
          'metadata loaded',
        );
      });

      context.onShutdown(async () => {
        recordSubscriptions.stopAll();
        await recordPublisher.close();
        await spool?.close();
        consumeStreams.stopAll();
        produceStreams.stop();
      });
      context.onShutdownAfterDrain(async () => {
        link.stop();
        storageClients.closeAll();
        fetcher.close();
        coordinators.close();
      });
    },
  });
}

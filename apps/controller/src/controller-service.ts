import { access, readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import {
  ConfigError,
  startService,
  SpoolError,
  type RunningService,
  type SettingsSchema,
  type TlsFiles,
} from '@spool/common';
import { createMetadataStore, MetadataKeys } from '@spool/metadata';
import { ControllerServiceService, protoDescriptorSetPath } from '@spool/protocol';
import type { BootstrapScramUser } from './bootstrap-users';
import { ControllerAnnouncer } from './controller-announcement';
import { ControllerMetrics } from './controller-metrics';
import { ControllerRole } from './controller-role';
import { controllerHandlers, type ControllerAccess } from './controller-rpc';
import { MetadataPublisher } from './metadata-publisher';
import {
  kubernetesGuardConfigMap,
  ScaleInGuardWriter,
  type GuardConfigMap,
} from './scale-in-guard-writer';

/**
 * The controller service: the cluster's brain. It owns brokers, topics, partitions, leaders, ISR
 * and epochs in the metadata store and pushes every change to the other services.
 */
export const controllerSettings = {
  metadataBackend: {
    type: 'string',
    default: 'local',
    choices: ['local', 'etcd'],
    description: 'Where cluster metadata lives: a local file (one controller) or etcd (several).',
  },
  metadataPath: {
    type: 'string',
    default: '.spool/controller/metadata.journal',
    description: "The local backend's file.",
  },
  etcdEndpoints: {
    type: 'list',
    default: ['127.0.0.1:2379'],
    description: 'etcd client endpoints (host:port), for the etcd backend.',
  },
  etcdSslCaLocation: {
    type: 'string',
    default: '',
    description:
      "PEM CA of etcd's server certificate (its --cert-file); set, the etcd connection is TLS.",
  },
  etcdSslCertificateLocation: {
    type: 'string',
    default: '',
    description: 'PEM client certificate for etcd (--client-cert-auth with --trusted-ca-file).',
  },
  etcdSslKeyLocation: {
    type: 'string',
    default: '',
    description: "PEM key of etcd.ssl.certificate.location's certificate.",
  },
  clusterName: {
    type: 'string',
    default: 'spool',
    pattern: /^[a-zA-Z0-9._-]{1,64}$/,
    description: "Names this cluster's keys in the metadata store, so clusters can share one etcd.",
  },
  controllerLeaseTtlMs: {
    type: 'integer',
    default: 5_000,
    min: 2_000,
    max: 120_000,
    description: "How long the active controller's election lease outlives its last renewal.",
  },
  brokerSessionTimeoutMs: {
    type: 'integer',
    default: 9_000,
    min: 200,
    max: 600_000,
    description: "A broker silent this long is fenced (Kafka's broker.session.timeout.ms).",
  },
  coordinatorSessionTimeoutMs: {
    type: 'integer',
    default: 9_000,
    min: 200,
    max: 600_000,
    description:
      'A coordinator silent this long is removed and its __consumer_offsets shards move to ' +
      'the others (like broker.session.timeout.ms).',
  },
  offsetsTopicNumPartitions: {
    type: 'integer',
    default: 50,
    min: 1,
    // A change of coordinators moves up to every shard; above 100 writes it is chunked
    // (coordinator-lifecycle.ts), and the group protocol's cost follows groups, not shards.
    max: 1_000,
    description:
      'Partitions of __consumer_offsets, the shards coordinators share ' +
      '(offsets.topic.num.partitions); fixed once the topic exists.',
  },
  defaultReplicationFactor: {
    type: 'integer',
    default: 1,
    min: 1,
    max: 32,
    description: 'Replication factor of topics created without one (default.replication.factor).',
  },
  numPartitions: {
    type: 'integer',
    default: 1,
    min: 1,
    max: 10_000,
    description: 'Partition count of topics created without one (num.partitions).',
  },
  autoLeaderRebalanceEnable: {
    type: 'boolean',
    default: true,
    description: 'Move leadership back to preferred replicas (auto.leader.rebalance.enable).',
  },
  leaderImbalanceCheckIntervalMs: {
    type: 'integer',
    default: 5_000,
    min: 100,
    max: 3_600_000,
    description: 'How often preferred leaders are restored.',
  },
  autoBalance: {
    type: 'boolean',
    default: false,
    description:
      'Spread replicas (by bytes) and preferred leaders evenly over brokers and racks after a ' +
      'broker joins or leaves and every auto.balance.interval.ms, moving a bounded amount at a time.',
  },
  autoBalanceIntervalMs: {
    type: 'integer',
    default: 300_000,
    min: 100,
    max: 86_400_000,
    description: 'How often the auto-balancer looks at the cluster besides broker changes.',
  },
  autoBalanceMovesMax: {
    type: 'integer',
    default: 10,
    min: 1,
    max: 1_000,
    description:
      'At most this many partitions reassigned at once while the auto-balancer moves replicas ' +
      '(moves started by hand count too).',
  },
  autoBalanceBytesMax: {
    type: 'integer',
    default: 10 * 1024 ** 3,
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    description:
      'Bytes of partitions the auto-balancer starts moving per round (one move always may start).',
  },
  autoBalanceTolerancePercent: {
    type: 'integer',
    default: 10,
    min: 0,
    max: 1_000,
    description:
      'Balanced once the most loaded broker holds at most this many percent more bytes than the ' +
      'least loaded.',
  },
  scaleInGuardConfigMap: {
    type: 'string',
    default: '',
    pattern: /^$|^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/,
    description:
      'The Kubernetes ConfigMap the active controller keeps telling which storage StatefulSet ' +
      "ordinals hold nothing, for the chart's scale-in guard (storageNode.scaleInGuard); empty, " +
      "the default, writes nothing. Needs the pod's service account (get and patch on it).",
  },
  scaleInGuardStatefulSet: {
    type: 'string',
    default: '',
    pattern: /^$|^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/,
    description:
      'The storage StatefulSet scale.in.guard.config.map speaks of (its uid is written with ' +
      'the answer, so an answer about an earlier StatefulSet of that name never counts).',
  },
  scaleInGuardNamespace: {
    type: 'string',
    default: '',
    pattern: /^$|^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
    description:
      "scale.in.guard.config.map's namespace; empty, the pod's own (its service account's).",
  },
  bootstrapScramUser: {
    type: 'string',
    default: '',
    pattern: /^$|^[A-Za-z0-9._@+-]{1,255}$/,
    description:
      'A SCRAM user the active controller keeps with the password in ' +
      'bootstrap.scram.password.file (SCRAM-SHA-256 and -512, written when missing or not ' +
      "matching), as Kafka's kafka-storage format --add-scram; empty, the default, makes none.",
  },
  bootstrapScramPasswordFile: {
    type: 'string',
    default: '',
    description:
      "The file holding bootstrap.scram.user's password (its first line), such as a mounted " +
      'Kubernetes Secret; read at start.',
  },
  testPauseAfterMetadataChunk: {
    type: 'integer',
    default: 0,
    min: 0,
    max: 1_000_000,
    description:
      'TEST HOOK for the crash tests, never for production: after this many store ' +
      'transactions of one topic change that spans several, the controller logs ' +
      '"test-hook-paused" and writes nothing more, so a test can kill it mid-change; ' +
      '0, the default, turns it off.',
  },
} as const satisfies SettingsSchema;

export const controllerDefaultPorts = { grpcPort: 9093, metricsPort: 9193 } as const;

/** How often the active controller checks broker sessions and offline partitions. */
const maintenanceIntervalMs = 100;

/**
 * The controller pings every peer each second and drops a connection whose ping goes unanswered
 * for 1.5 s, as its peers do the other way (controllerKeepaliveOptions in cluster-link). A paused
 * or cut-off storage node's metadata stream then closes in about 2.5 s and it is fenced a grace
 * later (watch-metadata-handler.ts), instead of after its whole session (a paused process's
 * kernel keeps the connection open, so nothing else closes it); a paused coordinator's shards
 * move the same way. A peer busy for 1.5 s answers late and costs one reconnect, or a fence that
 * is safe (broker-lifecycle.ts, fenceDisconnected).
 */
const controllerServerKeepalive = { timeMs: 1_000, timeoutMs: 1_500 };

export function startController(
  options: {
    argv?: readonly string[];
    env?: Record<string, string | undefined>;
    handleSignals?: boolean;
  } = {},
): Promise<RunningService> {
  return startService({
    name: 'controller',
    settings: controllerSettings,
    defaultPorts: controllerDefaultPorts,
    descriptorSetPaths: [protoDescriptorSetPath],
    grpcKeepalive: controllerServerKeepalive,
    ...options,
    setup: async ({
      config,
      logger,
      metrics,
      readiness,
      grpc,
      onShutdown,
      onShutdownAfterDrain,
      afterListen,
      advertisedHost,
      transportSecurity,
    }) => {
      const scaleInGuardConfigMap =
        config.scaleInGuardConfigMap === '' ? undefined : await guardConfigMapOf(config);
      const bootstrapScramUsers = bootstrapScramUsersOf(config);
      readiness.require('metadata store');
      const store = await createMetadataStore(
        config.metadataBackend === 'etcd'
          ? { backend: 'etcd', endpoints: config.etcdEndpoints, ...etcdTlsOf(config) }
          : { backend: 'local', path: config.metadataPath },
        { logger: logger.child({ component: 'metadata-store' }) },
      );
      readiness.satisfy('metadata store');
      const controllerMetrics = new ControllerMetrics(metrics);
      const publisher = new MetadataPublisher(logger.child({ component: 'metadata-publisher' }));
      let role: ControllerRole | undefined;
      // The role starts once the port is known (its address is its name in the election);
      // until then every call is answered NOT_CONTROLLER.
      const access: ControllerAccess = {
        requireActive: () =>
          role === undefined
            ? Promise.reject(new SpoolError('NOT_CONTROLLER', 'this controller is still starting'))
            : role.requireActive(),
        activeAddress: async () => (role === undefined ? '' : role.activeAddress()),
      };
      const handlers = controllerHandlers(access, publisher);
      grpc.addService(ControllerServiceService, handlers);

      afterListen(async ({ grpcPort }) => {
        const host = advertisedHost;
        role = new ControllerRole(
          store,
          new MetadataKeys(config.clusterName),
          `${host}:${grpcPort}`,
          {
            leaseTtlMs: config.controllerLeaseTtlMs,
            brokerSessionTimeoutMs: config.brokerSessionTimeoutMs,
            defaultReplicationFactor: config.defaultReplicationFactor,
            defaultPartitionCount: config.numPartitions,
            coordinatorSessionTimeoutMs: config.coordinatorSessionTimeoutMs,
            offsetsTopicPartitionCount: config.offsetsTopicNumPartitions,
            maintenanceIntervalMs,
            autoLeaderRebalanceEnable: config.autoLeaderRebalanceEnable,
            leaderImbalanceCheckIntervalMs: config.leaderImbalanceCheckIntervalMs,
            autoBalance: config.autoBalance,
            autoBalanceIntervalMs: config.autoBalanceIntervalMs,
            autoBalanceMovesMax: config.autoBalanceMovesMax,
            autoBalanceBytesMax: config.autoBalanceBytesMax,
            autoBalanceTolerancePercent: config.autoBalanceTolerancePercent,
            testPauseAfterMetadataChunk: config.testPauseAfterMetadataChunk,
            bootstrapScramUsers,
          },
          logger.child({ component: 'controller-role' }),
          controllerMetrics,
          (brokerId, brokerEpoch) => publisher.isWatching({ brokerId, brokerEpoch }),
          new ControllerAnnouncer(
            transportSecurity,
            logger.child({ component: 'controller-announcement' }),
          ),
        );
        const scaleInGuard =
          scaleInGuardConfigMap === undefined
            ? undefined
            : new ScaleInGuardWriter(
                scaleInGuardConfigMap,
                logger.child({ component: 'scale-in-guard' }),
              );
        role.onChange((active, state) => {
          controllerMetrics.setView(state, active?.replicaSizes);
          if (active === undefined) publisher.endAll();
          scaleInGuard?.follow(active === undefined ? undefined : state);
        });
        const running = role
          .run()
          .catch((error: unknown) => logger.fatal({ err: error }, 'controller role failed'));
        onShutdown(async () => {
          await scaleInGuard?.stop();
          await role!.stop();
          publisher.endAll();
          await running;
        });
      });
      onShutdownAfterDrain(() => store.close());
    },
  });
}

/** bootstrap.scram.user with the password from its file; a ConfigError naming what is wrong. */
function bootstrapScramUsersOf(config: {
  readonly bootstrapScramUser: string;
  readonly bootstrapScramPasswordFile: string;
}): BootstrapScramUser[] {
  if (config.bootstrapScramUser === '') {
    if (config.bootstrapScramPasswordFile !== '') {
      throw new ConfigError(
        'bootstrap.scram.password.file is set but bootstrap.scram.user is empty; set both or neither',
      );
    }
    return [];
  }
  if (config.bootstrapScramPasswordFile === '') {
    throw new ConfigError(
      `bootstrap.scram.user=${config.bootstrapScramUser} needs bootstrap.scram.password.file`,
    );
  }
  let contents: string;
  try {
    contents = readFileSync(config.bootstrapScramPasswordFile, 'utf8');
  } catch (error) {
    throw new ConfigError(
      `bootstrap.scram.password.file ${config.bootstrapScramPasswordFile} cannot be read ` +
        `(${(error as NodeJS.ErrnoException).code ?? String(error)})`,
    );
  }
  const password = contents.split(/\r?\n/, 1)[0] ?? '';
  if (password === '') {
    throw new ConfigError(
      `bootstrap.scram.password.file ${config.bootstrapScramPasswordFile} holds no password ` +
        '(its first line is empty)',
    );
  }
  return [{ user: config.bootstrapScramUser, password }];
}

/** One Kubernetes API call of the scale-in guard gives up after this. */
const scaleInGuardRequestTimeoutMs = 5_000;
const serviceAccountNamespaceFile = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';
const serviceAccountTokenFile = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** The scale-in guard's ConfigMap, in scale.in.guard.namespace or the pod's own namespace. */
async function guardConfigMapOf(config: {
  readonly scaleInGuardConfigMap: string;
  readonly scaleInGuardStatefulSet: string;
  readonly scaleInGuardNamespace: string;
}): Promise<GuardConfigMap> {
  if (config.scaleInGuardStatefulSet === '') {
    throw new ConfigError('scale.in.guard.config.map needs scale.in.guard.stateful.set');
  }
  let namespace = config.scaleInGuardNamespace;
  if (namespace === '') {
    namespace = await readFile(serviceAccountNamespaceFile, 'utf8').then(
      (text) => text.trim(),
      (error: unknown) => {
        throw new ConfigError(
          `scale.in.guard.config.map is set but scale.in.guard.namespace is not, and the pod's ` +
            `namespace cannot be read from ${serviceAccountNamespaceFile}: ${(error as Error).message}`,
        );
      },
    );
  }
  const tokenReadable = await access(serviceAccountTokenFile).then(
    () => true,
    () => false,
  );
  if (process.env['KUBERNETES_SERVICE_HOST'] === undefined || !tokenReadable) {
    throw new ConfigError(
      `scale.in.guard.config.map ${namespace}/${config.scaleInGuardConfigMap} needs the ` +
        'Kubernetes API from inside a pod: KUBERNETES_SERVICE_HOST and the service account ' +
        `token ${serviceAccountTokenFile} (automountServiceAccountToken)`,
    );
  }
  return kubernetesGuardConfigMap(
    namespace,
    config.scaleInGuardConfigMap,
    config.scaleInGuardStatefulSet,
    scaleInGuardRequestTimeoutMs,
  );
}

/**
 * The etcd connection's TLS files from etcd.ssl.*, or nothing for plaintext etcd; checked for a
 * rotation every ssl.reload.interval.ms, as the service's own certificate files are.
 */
function etcdTlsOf(config: {
  readonly etcdSslCaLocation: string;
  readonly etcdSslCertificateLocation: string;
  readonly etcdSslKeyLocation: string;
  readonly sslReloadIntervalMs: number;
}): { tls?: TlsFiles; tlsReloadIntervalMs?: number } {
  if (config.etcdSslCaLocation === '') {
    if (config.etcdSslCertificateLocation !== '' || config.etcdSslKeyLocation !== '') {
      throw new ConfigError(
        'etcd.ssl.certificate.location and etcd.ssl.key.location need etcd.ssl.ca.location',
      );
    }
    return {};
  }
  return {
    tlsReloadIntervalMs: config.sslReloadIntervalMs,
    tls: {
      caFile: config.etcdSslCaLocation,
      ...(config.etcdSslCertificateLocation === ''
        ? {}
        : { certificateFile: config.etcdSslCertificateLocation }),
      ...(config.etcdSslKeyLocation === '' ? {} : { keyFile: config.etcdSslKeyLocation }),
    },
  };
}

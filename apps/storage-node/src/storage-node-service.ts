import * as os from 'node:os';
import {
  ConfigError,
  startService,
  type Logger,
  type RunningService,
  type SettingsSchema,
} from '@spool/common';
import type { ServerDuplexStream } from '@grpc/grpc-js';
import {
  ClusterMetadataCache,
  StorageServiceService,
  protoDescriptorSetPath,
  type AppendStreamRequest,
  type AppendStreamResponse,
} from '@spool/protocol';
import { logOpenFilesMaxDefault, logOpenFilesMaxMinimum } from '@spool/segment-store';
import { resolveBrokerId } from './broker-identity';
import { rackFromNodeLabel } from './node-rack';
import type { ControllerLink } from './controller-link';
import { DataDirectory } from './data-directory';
import { DataPortServer } from './data-port/data-port-server';
import { createFetchHandlers } from './data-port/fetch-handler';
import { ReplicaManager } from './replica/replica-manager';
import { createLogFileHandleCache, registerLogOpenFileMetrics } from './log-open-files';
import { StorageMetrics } from './storage-metrics';
import { ReplicationRoles } from './replica/replication-roles';
import { ReplicationThrottles } from './replica/replication-throttles';
import { leaderThrottlesReplica } from './replica/throttled-replicas';
import { startReplication } from './replica/replication-startup';
import { startLogMaintenance } from './log-maintenance';
import { startLogCleaner, type LogCleanerRunner } from './log-cleaner-runner';
import { startSlowDiskTestHook } from './slow-disk-test-hook';
import { openLogDirectory } from './log-directory-setup';
import { appendStreams as createAppendStreams } from './append-streams';
import { storageHandlers } from './storage-rpc';

/**
 * The storage-node service: hosts partition replicas on its own disk, takes produce requests for
 * the partitions it leads and serves fetches through its data port.
 */
export const storageNodeSettings = {
  brokerId: {
    type: 'integer',
    default: -1,
    min: -1,
    max: 2_147_483_647,
    description: "This node's broker id; -1 takes it from the StatefulSet ordinal in the pod name.",
  },
  podName: {
    type: 'string',
    default: '',
    description:
      'The StatefulSet pod name a broker id of -1 is taken from (the downward API field ' +
      "metadata.name); empty means this machine's host name, which in a pod is its name.",
  },
  rack: {
    type: 'string',
    default: '',
    description: 'Rack or zone of this node, for rack-aware replica placement (broker.rack).',
  },
  rackFromNodeLabel: {
    type: 'string',
    default: '',
    pattern: /^$|^([a-zA-Z0-9.-]+\/)?[a-zA-Z0-9._-]+$/,
    description:
      "A Kubernetes node label (e.g. topology.kubernetes.io/zone) whose value on this pod's " +
      'node is the rack, read through the Kubernetes API at start-up; needs node.name.',
  },
  nodeName: {
    type: 'string',
    default: '',
    description:
      'The Kubernetes node this pod runs on (the downward API field spec.nodeName), for ' +
      'rack.from.node.label.',
  },
  dataDir: {
    type: 'string',
    default: '.spool/storage',
    description: 'Where this node keeps its partition logs (log.dirs); one process per directory.',
  },
  controllerAddresses: {
    type: 'list',
    default: ['127.0.0.1:9093'],
    description: 'Controller gRPC addresses (host:port); any of them, the active one is found.',
  },
  dataPort: {
    type: 'integer',
    default: 9292,
    min: 0,
    max: 65535,
    description: 'Port of the binary data port that serves fetches with sendfile; 0 picks one.',
  },
  brokerHeartbeatIntervalMs: {
    type: 'integer',
    default: 2_000,
    min: 50,
    max: 60_000,
    description: 'How often this node heartbeats to the controller (broker.heartbeat.interval.ms).',
  },
  logRetentionCheckIntervalMs: {
    type: 'integer',
    default: 300_000,
    min: 100,
    max: 86_400_000,
    description: 'How often retention deletes old segments (log.retention.check.interval.ms).',
  },
  logCleanerEnable: {
    type: 'boolean',
    default: true,
    description:
      'Run the log cleaner, which compacts topics with cleanup.policy=compact (log.cleaner.enable).',
  },
  logCleanerBackoffMs: {
    type: 'integer',
    default: 15_000,
    min: 10,
    max: 3_600_000,
    description:
      'How long the log cleaner waits after a pass that found no log to clean (log.cleaner.backoff.ms).',
  },
  logCleanerDedupeBufferSize: {
    type: 'integer',
    default: 128 * 1024 * 1024,
    min: 1024,
    max: 2_147_483_647,
    description:
      "Bytes of the cleaner's offset map, about 28 a key; a larger dirty section is cleaned over " +
      'several passes (log.cleaner.dedupe.buffer.size). Allocated when a log is first cleaned.',
  },
  logCleanerIoMaxBytesPerSecond: {
    type: 'integer',
    default: 0,
    min: 0,
    max: Number.MAX_SAFE_INTEGER,
    description:
      'Most bytes a second the cleaner reads and writes together; 0 is no limit ' +
      '(log.cleaner.io.max.bytes.per.second).',
  },
  replicaLagTimeMaxMs: {
    type: 'integer',
    default: 30_000,
    min: 100,
    max: 600_000,
    description: 'A follower not caught up for this long leaves the ISR (replica.lag.time.max.ms).',
  },
  replicaFetchMaxBytes: {
    type: 'integer',
    default: 1024 * 1024,
    min: 1024,
    max: 64 * 1024 * 1024,
    description: 'Bytes a follower asks for per partition in one fetch (replica.fetch.max.bytes).',
  },
  replicaFetchWaitMaxMs: {
    type: 'integer',
    default: 500,
    min: 0,
    max: 30_000,
    description:
      "How long a follower's fetch waits at the leader for data (replica.fetch.wait.max.ms).",
  },
  leaderReplicationThrottledRate: {
    type: 'integer',
    default: 0,
    min: 0,
    max: Number.MAX_SAFE_INTEGER,
    description:
      'Bytes per second this node, as leader, sends to replicas a reassignment adds and to ' +
      'out-of-sync replicas a topic lists in leader.replication.throttled.replicas ' +
      '(leader.replication.throttled.rate); 0: unthrottled. A dynamic broker config overrides it.',
  },
  followerReplicationThrottledRate: {
    type: 'integer',
    default: 0,
    min: 0,
    max: Number.MAX_SAFE_INTEGER,
    description:
      'Bytes per second this node fetches for replicas a reassignment adds to it and for its ' +
      'out-of-sync replicas a topic lists in follower.replication.throttled.replicas ' +
      '(follower.replication.throttled.rate); 0: unthrottled. A dynamic broker config ' +
      'overrides it.',
  },
  replicaSyncReadinessTimeoutMs: {
    type: 'integer',
    default: 300_000,
    min: 0,
    max: 3_600_000,
    description:
      "Longest /readyz waits for this node's replicas to rejoin their ISRs after a start.",
  },
  producerIdExpirationMs: {
    type: 'integer',
    default: 86_400_000,
    min: 1_000,
    max: 2_147_483_647,
    description:
      'A producer id silent this long is forgotten by each partition (producer.id.expiration.ms).',
  },
  producerIdExpirationCheckIntervalMs: {
    type: 'integer',
    default: 600_000,
    min: 100,
    max: 86_400_000,
    description:
      'How often idle producer ids are expired (producer.id.expiration.check.interval.ms).',
  },
  maxProducersPerPartition: {
    type: 'integer',
    default: 10_000,
    min: 1,
    max: 1_000_000,
    description:
      'Idempotent producers one partition remembers; past it the least recently active goes.',
  },
  metricsPerPartition: {
    type: 'boolean',
    default: true,
    description: 'Export per-partition gauges; switch off on nodes with very many partitions.',
  },
  logVerifyOnStart: {
    type: 'boolean',
    default: true,
    description:
      'Read back every batch of every local log (CRC-32C and framing) once at start-up, before ' +
      'the replica serves or rejoins its ISR, and truncate a log at the first corrupt batch so ' +
      'it is fetched again from the leader. Start-up then takes as long as reading the data ' +
      'directory once; switch off to start faster and trust the disk.',
  },
  logOpenFilesMax: {
    type: 'integer',
    default: logOpenFilesMaxDefault,
    min: logOpenFilesMaxMinimum,
    max: 1_048_576,
    description:
      'Most log segment and index files held open at once; the least recently used close past ' +
      'it and reopen on their next use, so idle partitions hold none. With 1,024 more for ' +
      'connections it must fit the open-file limit (ulimit -n).',
  },
  testSlowDiskFile: {
    type: 'string',
    default: '',
    description:
      'TEST HOOK for the fault suite, never for production: a file holding a delay in ms that ' +
      'every log append then blocks for (a slow disk); empty, the default, turns it off.',
  },
} as const satisfies SettingsSchema;

export const storageNodeDefaultPorts = { grpcPort: 9092, metricsPort: 9192 } as const;

export function startStorageNode(
  options: {
    argv?: readonly string[];
    env?: Record<string, string | undefined>;
    handleSignals?: boolean;
  } = {},
): Promise<RunningService> {
  return startService({
    name: 'storage-node',
    settings: storageNodeSettings,
    defaultPorts: storageNodeDefaultPorts,
    descriptorSetPaths: [protoDescriptorSetPath],
    ...options,
    setup: async (context) => {
      const { config, logger, metrics, readiness, grpc } = context;
      const brokerId = resolveBrokerId(
        config.brokerId,
        config.podName === '' ? os.hostname() : config.podName,
      );
      const nodeLogger = logger.child({ brokerId });
      const rack = await resolveRack(config, nodeLogger);
      const dataDirectory = DataDirectory.open(config.dataDir);
      const logFiles = createLogFileHandleCache(config.logOpenFilesMax);
      registerLogOpenFileMetrics(metrics, logFiles);
      // The controller link exists once the node listens; until then a change waits for the
      // first heartbeat, which carries the state.
      const controllerLink: { current?: ControllerLink } = {};
      const { logDirHealth, logDirectory } = openLogDirectory(context, {
        logger: nodeLogger,
        files: logFiles,
        onOfflineChange: () => controllerLink.current?.heartbeatNow(),
      });
      // Off (no setting): nothing starts, and the append paths get no hook to call.
      const slowDisk =
        config.testSlowDiskFile === ''
          ? undefined
          : startSlowDiskTestHook(config.testSlowDiskFile, nodeLogger);
      if (slowDisk !== undefined) context.onShutdown(async () => slowDisk.stop());
      const metadata = new ClusterMetadataCache();
      const replication = new ReplicationRoles();
      const throttles = new ReplicationThrottles(config);
      // The metrics read the replicas at scrape time; the replicas report recoveries to them.
      const replicaHolder: { manager?: ReplicaManager } = {};
      // The cleaner starts once the logs are open; a replica removed before has nothing to forget.
      const logCleanerHolder: { runner?: LogCleanerRunner } = {};
      const storageMetrics = new StorageMetrics(
        metrics,
        context.requestMetrics,
        () => replicaHolder.manager,
        dataDirectory,
        config.metricsPerPartition,
        (replica) => Number(metadata.topicConfig(replica.topic, 'min.insync.replicas') ?? '1'),
      );
      const replicaManager = new ReplicaManager(
        brokerId,
        dataDirectory,
        metadata,
        nodeLogger.child({ component: 'replicas' }),
        {
          onLogOpened: (_name, report) => {
            storageMetrics.recoverySegmentsScanned.inc(report.segmentsScanned);
            storageMetrics.recoveryBytesTruncated.inc(report.bytesTruncated);
          },
          onLogCorruption: (_name, _corruption, bytesTruncated) => {
            storageMetrics.corruptBatchesFound.inc();
            storageMetrics.recoveryBytesTruncated.inc(bytesTruncated);
          },
          onRoleChange: (replica, change) => replication.onRoleChange(replica, change),
          onReplicaRemoved: (replica) => {
            replication.onRemoved(replica);
            logCleanerHolder.runner?.forget(replica);
          },
        },
        {
          logDirectory,
          verifyLogsOnStart: config.logVerifyOnStart,
          logDir: logDirHealth,
          producerStateSettings: {
            producerIdExpirationMs: config.producerIdExpirationMs,
            maxProducers: config.maxProducersPerPartition,
          },
        },
      );
      replicaHolder.manager = replicaManager;
      const replicas = replicaManager;
      readiness.require('local logs');
      const loaded = await replicas.openLocalLogs();
      readiness.satisfy('local logs');
      nodeLogger.info(
        {
          dataDir: config.dataDir,
          ...loaded,
          seconds: loaded.durationMs / 1000,
          openFiles: logFiles.statistics.openFiles,
          openFilesMax: logFiles.openFilesMax,
        },
        `local logs open: ${loaded.logsLoaded} loaded after a ` +
          `${loaded.cleanShutdown ? 'clean shutdown' : 'crash'}, ${loaded.logsRecovered} ` +
          `recovered (${loaded.segmentsRecovered} segments scanned, ${loaded.bytesTruncated} ` +
          `bytes truncated) in ${(loaded.durationMs / 1000).toFixed(1)} s`,
      );

      const handlers = storageHandlers(
        () => replicas,
        (topic, name) => metadata.topicConfig(topic, name),
        storageMetrics,
        { brokerId, link: () => controllerLink.current },
        slowDisk?.beforeLogAppend,
      );
      const appendStreams = createAppendStreams(
        handlers.append,
        context.requestMetrics,
        nodeLogger.child({ component: 'append-streams' }),
      );
      // Append, ListOffsets, DeleteRecords come from gateways and coordinators only: under TLS
      // a client certificate without a service role is refused (CLUSTER_AUTHORIZATION_FAILED).
      grpc.addService(
        StorageServiceService,
        {
          ...handlers,
          appendStream: (call: ServerDuplexStream<AppendStreamRequest, AppendStreamResponse>) =>
            appendStreams.serve(call),
        },
        { peersMustBeServices: true },
      );
      const dataPort = new DataPortServer({
        logger: nodeLogger,
        registry: metrics,
        handlers: createFetchHandlers({
          replicas: () => replicas,
          metrics: storageMetrics,
          onFollowerFetch: (replica, followerId, fetchOffset) => {
            replica.recordFollowerFetch(followerId, fetchOffset, Date.now());
            replication.isr?.maybeUpdate(replica);
          },
          leaderThrottle: {
            throttle: throttles.leader,
            isThrottledReplica: (topic, partition, replicaId) =>
              leaderThrottlesReplica(metadata, topic, partition, brokerId, replicaId),
            onThrottled: () => storageMetrics.reassignmentThrottled.inc(),
          },
        }),
        onBytesSent: (topic, sizeBytes) => storageMetrics.bytesOut.inc({ topic }, sizeBytes),
        ...(context.transportSecurity === undefined
          ? {}
          : { transportSecurity: context.transportSecurity }),
      });
      const dataPortBound = await dataPort.listen(config.host, config.dataPort);

      readiness.require('metadata');
      context.afterListen(async ({ grpcPort }) => {
        const host = context.advertisedHost;
        startReplication(context, {
          brokerId,
          rack,
          endpoints: [
            { name: 'grpc', host, port: grpcPort },
            { name: 'data', host, port: dataPortBound },
          ],
          logger: nodeLogger,
          metadata,
          replicas,
          replication,
          storageMetrics,
          logDirHealth,
          appendStreams,
          beforeLogAppend: slowDisk?.beforeLogAppend,
          onLink: (link) => (controllerLink.current = link),
          cleanerStates: () => logCleanerHolder.runner?.partitionStates() ?? [],
          throttles,
        });
        nodeLogger.info({ dataPort: dataPortBound }, 'data port listening');
      });

      const stopLogMaintenance = startLogMaintenance(replicas, {
        retentionCheckIntervalMs: config.logRetentionCheckIntervalMs,
        producerIdExpirationCheckIntervalMs: config.producerIdExpirationCheckIntervalMs,
        logger: nodeLogger,
      });
      context.onShutdown(async () => stopLogMaintenance());
      if (config.logCleanerEnable) {
        const logCleaner = startLogCleaner(replicas, {
          dataDirectory: config.dataDir,
          settings: {
            dedupeBufferSizeBytes: config.logCleanerDedupeBufferSize,
            ioMaxBytesPerSecond:
              config.logCleanerIoMaxBytesPerSecond === 0
                ? Number.POSITIVE_INFINITY
                : config.logCleanerIoMaxBytesPerSecond,
          },
          backoffMs: config.logCleanerBackoffMs,
          logger: nodeLogger.child({ component: 'log-cleaner' }),
          registry: metrics,
          metricsPerPartition: config.metricsPerPartition,
        });
        logCleanerHolder.runner = logCleaner;
        context.onShutdown(() => logCleaner.stop());
      }
      context.onShutdownAfterDrain(async () => {
        await dataPort.close(2_000);
        await replicas.closeAll();
        // Every log is closed: the recovery points, then the clean-shutdown marker.
        logDirectory.close();
        dataDirectory.release();
      });
    },
  });
}

/** The rack this node registers: set explicitly, or read from its Kubernetes node's label. */
async function resolveRack(
  config: { rack: string; rackFromNodeLabel: string; nodeName: string },
  logger: Logger,
): Promise<string> {
  if (config.rackFromNodeLabel === '') return config.rack;
  if (config.rack !== '') {
    throw new ConfigError(
      `settings rack (${JSON.stringify(config.rack)}) and rack.from.node.label ` +
        `(${JSON.stringify(config.rackFromNodeLabel)}) exclude each other; set one`,
    );
  }
  const rack = await rackFromNodeLabel(
    { nodeName: config.nodeName, labelKey: config.rackFromNodeLabel },
    logger,
  );
  logger.info(
    { rack, node: config.nodeName, label: config.rackFromNodeLabel },
    'rack read from the Kubernetes node label',
  );
  return rack;
}

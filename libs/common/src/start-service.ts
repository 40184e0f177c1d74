import * as os from 'node:os';
import type { Registry } from 'prom-client';
import {
  loadConfig,
  ConfigError,
  describeSettings,
  type ConfigValues,
  type SettingsSchema,
} from './config';
import { GrpcServer, grpcMaxMessageBytesDefault } from './grpc-server';
import { startOperationsServer } from './http-server';
import { createLogger, logLevels, type LogLevel, type Logger } from './logger';
import { createMetricsRegistry } from './metrics';
import { RequestMetrics } from './request-metrics';
import { Readiness } from './readiness';
import { installSignalHandlers, runShutdownSteps, type ShutdownStep } from './shutdown';

/**
 * The start-up every service shares: validate the configuration, create the logger and metrics,
 * let the service register its RPCs and readiness conditions, listen, answer health, and on
 * SIGTERM or SIGINT stop in order: not ready, the service's own stop steps, drain gRPC, close the
 * operations port, exit 0.
 */
export function commonSettings(defaults: { grpcPort: number; metricsPort: number }) {
  return {
    host: {
      type: 'string',
      default: '127.0.0.1',
      description: 'Address the gRPC and metrics listeners bind to (0.0.0.0 in a container).',
    },
    advertisedHost: {
      type: 'string',
      default: '',
      description: 'Host name other processes use to reach this one; empty means the bind host.',
    },
    grpcPort: {
      type: 'integer',
      default: defaults.grpcPort,
      min: 0,
      max: 65535,
      description: 'gRPC listener port; 0 picks a free one.',
    },
    metricsPort: {
      type: 'integer',
      default: defaults.metricsPort,
      min: 0,
      max: 65535,
      description: 'Port of /metrics, /healthz and /readyz; 0 picks a free one.',
    },
    logLevel: {
      type: 'string',
      default: 'info',
      choices: logLevels,
      description: 'Least severe log level written.',
    },
    shutdownTimeoutMs: {
      type: 'integer',
      default: 10_000,
      min: 100,
      max: 600_000,
      description: 'How long shutdown waits for in-flight work before cancelling it.',
    },
    grpcMaxMessageBytes: {
      type: 'integer',
      default: grpcMaxMessageBytesDefault,
      min: 1024,
      max: 1024 * 1024 * 1024,
      description: 'Largest gRPC message accepted or sent.',
    },
  } as const satisfies SettingsSchema;
}

export type CommonSettings = ReturnType<typeof commonSettings>;

export interface ServiceContext<S extends SettingsSchema> {
  readonly config: ConfigValues<S & CommonSettings>;
  readonly logger: Logger;
  readonly metrics: Registry;
  /** Per-API request count, errors and latency; gRPC calls are recorded here already. */
  readonly requestMetrics: RequestMetrics;
  readonly readiness: Readiness;
  readonly grpc: GrpcServer;
  /** The host other processes reach this one at: the advertised host, else the bind host. */
  readonly advertisedHost: string;
  /** Steps run at shutdown, in registration order, before gRPC drains. */
  onShutdown(step: ShutdownStep): void;
  /** Steps run after gRPC drained: close logs, flush files. */
  onShutdownAfterDrain(step: ShutdownStep): void;
  /** Runs once the listeners are bound, with their ports (a port setting of 0 picks one). */
  afterListen(step: (ports: { grpcPort: number; metricsPort: number }) => Promise<void>): void;
}

export interface RunningService {
  readonly grpcPort: number;
  readonly metricsPort: number;
  stop(): Promise<void>;
}

export interface ServiceDefinition<S extends SettingsSchema> {
  /** The service's name in logs and metrics: `controller`, `storage-node`, ... */
  readonly name: string;
  readonly settings: S;
  readonly defaultPorts: { grpcPort: number; metricsPort: number };
  /** FileDescriptorSets for gRPC reflection. */
  readonly descriptorSetPaths: readonly string[];
  readonly setup: (context: ServiceContext<S>) => Promise<void>;
  readonly argv?: readonly string[];
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Exit the process on a signal (true for a service's main; false in tests). */
  readonly handleSignals?: boolean;
}

/**
 * Starts a service. A bad configuration is reported as one line on stderr and the process exits
 * with code 2 (when it owns the process); any other start-up failure is logged and rethrown.
 */
export async function startService<S extends SettingsSchema>(
  definition: ServiceDefinition<S>,
): Promise<RunningService> {
  const schema = { ...commonSettings(definition.defaultPorts), ...definition.settings };
  const argv = definition.argv ?? process.argv.slice(2);
  if (argv.includes('--help')) {
    process.stdout.write(`spool ${definition.name} [flags]\n\n${describeSettings(schema)}\n`);
    process.exit(0);
  }
  let config: ConfigValues<S & CommonSettings>;
  try {
    config = loadConfig(schema, { argv, env: definition.env }) as ConfigValues<S & CommonSettings>;
  } catch (error) {
    if (error instanceof ConfigError && definition.handleSignals !== false) {
      process.stderr.write(`spool ${definition.name}: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }

  // The settings every service has, typed on their own: the generic intersection hides them.
  const common = config as unknown as ConfigValues<CommonSettings>;
  const logger = createLogger({ service: definition.name, level: common.logLevel as LogLevel });
  const metrics = createMetricsRegistry(definition.name);
  const requestMetrics = new RequestMetrics(metrics);
  const readiness = new Readiness();
  const grpc = new GrpcServer(logger.child({ component: 'grpc' }), {
    maxMessageBytes: common.grpcMaxMessageBytes,
    descriptorSetPaths: definition.descriptorSetPaths,
    requestMetrics,
  });
  const beforeDrain: ShutdownStep[] = [];
  const afterDrain: ShutdownStep[] = [];
  const afterListen: Array<(ports: { grpcPort: number; metricsPort: number }) => Promise<void>> =
    [];
  readiness.require('start-up');
  readiness.onChange((ready) => grpc.setServing(ready));

  try {
    await definition.setup({
      config,
      logger,
      metrics,
      requestMetrics,
      readiness,
      grpc,
      advertisedHost:
        common.advertisedHost !== ''
          ? common.advertisedHost
          : common.host === '0.0.0.0'
            ? os.hostname()
            : common.host,
      onShutdown: (step) => beforeDrain.push(step),
      onShutdownAfterDrain: (step) => afterDrain.push(step),
      afterListen: (step) => afterListen.push(step),
    });
  } catch (error) {
    logger.fatal({ err: error }, 'start-up failed');
    throw error;
  }
  const grpcPort = await grpc.listen(common.host, common.grpcPort);
  const operations = await startOperationsServer({
    host: common.host,
    port: common.metricsPort,
    registry: metrics,
    readiness,
    logger,
  });
  for (const step of afterListen) await step({ grpcPort, metricsPort: operations.port });
  readiness.satisfy('start-up');
  logger.info(
    { event: 'started', grpcPort, metricsPort: operations.port },
    `${definition.name} started`,
  );

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      const startedAtMs = Date.now();
      logger.info({ event: 'stopping' }, `${definition.name} stopping`);
      readiness.beginShutdown();
      const deadlineMs = startedAtMs + common.shutdownTimeoutMs;
      await runShutdownSteps(beforeDrain, deadlineMs, logger);
      const { drained } = await grpc.shutdown(Math.max(0, deadlineMs - Date.now()));
      await runShutdownSteps(afterDrain, deadlineMs + common.shutdownTimeoutMs, logger);
      await operations.close();
      logger.info(
        { event: 'stopped', drained, durationMs: Date.now() - startedAtMs },
        `${definition.name} stopped`,
      );
    })();
    return stopping;
  };
  if (definition.handleSignals !== false) installSignalHandlers(stop, logger);
  return { grpcPort, metricsPort: operations.port, stop };
}

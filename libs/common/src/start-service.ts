import * as net from 'node:net';
import * as os from 'node:os';
import type { Registry } from 'prom-client';
import {
  loadConfig,
  ConfigError,
  describeSettings,
  type ConfigValues,
  type SettingsSchema,
  fileKey,
} from './config';
import { CommonErrorCode, SpoolError } from './errors';
import { GrpcServer, grpcMaxMessageBytesDefault, type GrpcServerKeepalive } from './grpc-server';
import { startOperationsServer } from './http-server';
import { createLogger, logLevels, type LogLevel, type Logger } from './logger';
import { createMetricsRegistry } from './metrics';
import { RequestMetrics } from './request-metrics';
import { securitySettings, transportSecurityOf } from './tls/security-settings';
import { TlsMaterialError } from './tls/tls-material';
import type { TransportSecurity } from './tls/transport-security';
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
    ...securitySettings,
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
  /**
   * TLS of this process (security.protocol=SSL): its gRPC listener uses it already; the service
   * gives it to its other listeners and to the channels it opens. Undefined for PLAINTEXT.
   */
  readonly transportSecurity: TransportSecurity | undefined;
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
  /** The gRPC server's pings to its peers; GrpcServer's default (30 s, 10 s) if unset. */
  readonly grpcKeepalive?: GrpcServerKeepalive;
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
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(
      `usage: spool ${definition.name} [flags]\n\n` +
        `  --config FILE (SPOOL_CONFIG)\n      settings from a .properties or .json file; ` +
        `flags > SPOOL_* variables > file > defaults\n${describeSettings(schema)}\n\n` +
        `example:\n  spool ${definition.name} --config ${definition.name}.properties --log-level debug\n`,
    );
    process.exit(0);
  }
  let config: ConfigValues<S & CommonSettings>;
  let transportSecurity: TransportSecurity | undefined;
  try {
    config = loadConfig(schema, { argv, env: definition.env }) as ConfigValues<S & CommonSettings>;
    transportSecurity = transportSecurityOf(config as unknown as ConfigValues<CommonSettings>, {
      role: 'server',
    });
  } catch (error) {
    const badSetting = error instanceof ConfigError || error instanceof TlsMaterialError;
    if (badSetting && definition.handleSignals !== false) {
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
    ...(transportSecurity === undefined ? {} : { transportSecurity }),
    ...(definition.grpcKeepalive === undefined ? {} : { keepalive: definition.grpcKeepalive }),
  });
  const beforeDrain: ShutdownStep[] = [];
  const afterDrain: ShutdownStep[] = [];
  const afterListen: Array<(ports: { grpcPort: number; metricsPort: number }) => Promise<void>> =
    [];
  readiness.require('start-up');
  readiness.onChange((ready) => grpc.setServing(ready));

  /**
   * A service that cannot start says why and goes: a process that owns itself exits 1 at once
   * (as a Kafka broker does when its port is taken), rather than lingering unready and silent
   * with whatever its setup started keeping the event loop alive; an embedding process gets the
   * error after what setup started has been stopped.
   */
  const failStart = async (error: unknown): Promise<never> => {
    logger.fatal({ err: error }, `start-up failed: ${(error as Error).message}`);
    if (definition.handleSignals !== false) process.exit(1);
    const deadlineMs = Date.now() + common.shutdownTimeoutMs;
    await runShutdownSteps(beforeDrain, deadlineMs, logger);
    await grpc.shutdown(0);
    await runShutdownSteps(afterDrain, deadlineMs + common.shutdownTimeoutMs, logger);
    throw error;
  };
  try {
    await definition.setup({
      config,
      logger,
      metrics,
      requestMetrics,
      readiness,
      grpc,
      transportSecurity,
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
    return failStart(error);
  }
  let grpcPort: number;
  let operations: Awaited<ReturnType<typeof startOperationsServer>>;
  try {
    grpcPort = await listenOrExplain('gRPC', 'grpcPort', common.host, common.grpcPort, () =>
      grpc.listen(common.host, common.grpcPort),
    );
    operations = await listenOrExplain(
      'metrics and health',
      'metricsPort',
      common.host,
      common.metricsPort,
      () =>
        startOperationsServer({
          host: common.host,
          port: common.metricsPort,
          registry: metrics,
          readiness,
          logger,
        }),
    );
  } catch (error) {
    return failStart(error);
  }
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
      transportSecurity?.close();
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

/**
 * Binds a listener, turning a failure into an error that names the address, the setting and the
 * operating system's reason (grpc-js says only "No address added out of total 1 resolved", so
 * its failure is probed again with a plain socket to learn the errno).
 */
async function listenOrExplain<T>(
  listener: string,
  settingName: string,
  host: string,
  port: number,
  listen: () => Promise<T>,
): Promise<T> {
  try {
    return await listen();
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (await probeBind(host, port));
    throw new SpoolError(
      CommonErrorCode.ListenFailed,
      `cannot listen for ${listener} on ${host}:${port} (setting ${fileKey(settingName)}): ` +
        `${reason === undefined ? '' : `${describeErrno(reason)}; `}${(error as Error).message}`,
      { cause: error },
    );
  }
}

/** The errno a plain TCP bind of the address fails with, or undefined if it binds now. */
function probeBind(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    probe.listen(port, host, () => probe.close(() => resolve(undefined)));
  });
}

function describeErrno(code: string): string {
  switch (code) {
    case 'EADDRINUSE':
      return 'EADDRINUSE, another process already listens on this port';
    case 'EADDRNOTAVAIL':
      return 'EADDRNOTAVAIL, no interface of this machine has that address';
    case 'EACCES':
      return 'EACCES, not allowed to bind this port (below 1024 needs privileges)';
    default:
      return code;
  }
}

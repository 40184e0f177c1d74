import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { parseArgs } from 'node:util';
import { serviceEntryPoint, type CommandContext, type ServiceName } from './commands';
import { spoolNodeFlags } from './node-flags';

/**
 * `spool dev`: a whole cluster on one machine, each service a separate process, so what runs
 * locally is what runs in production. Logs are streamed with a prefix per process; the ports
 * each process bound are written to `<data-dir>/cluster.json`; Ctrl-C stops every process and
 * leaves none behind.
 */
interface ClusterProcess {
  readonly role: ServiceName;
  readonly id: number;
  readonly child: ChildProcess;
  ports?: { grpc: number; metrics: number; data?: number };
  dataPort?: number;
}

/** How long start-up may take before `spool dev` gives up and stops what it started. */
const startTimeoutMs = 30_000;
/** How long a process gets to exit after SIGTERM before it is killed. */
const stopTimeoutMs = 10_000;

export async function runDevCluster(context: CommandContext): Promise<number> {
  const { values } = parseArgs({
    args: [...context.argv],
    options: {
      'data-dir': { type: 'string', default: '.spool' },
      'gateway-port': { type: 'string', default: '9090' },
      nodes: { type: 'string', default: '3' },
      coordinators: { type: 'string', default: '1' },
      // For profiling the data path: the gateway and storage nodes write V8 CPU profiles here
      // when they exit (node --cpu-prof; NODE_OPTIONS may not carry it).
      'profile-dir': { type: 'string' },
    },
    strict: true,
  });
  const nodes = Number(values.nodes);
  if (!Number.isInteger(nodes) || nodes < 1 || nodes > 16) {
    context.stderr.write(
      `spool dev: --nodes must be an integer from 1 to 16, got "${values.nodes}"\n`,
    );
    return 2;
  }
  const coordinators = Number(values.coordinators);
  if (!Number.isInteger(coordinators) || coordinators < 1 || coordinators > 8) {
    context.stderr.write(
      `spool dev: --coordinators must be an integer from 1 to 8, got "${values.coordinators}"\n`,
    );
    return 2;
  }
  const gatewayPort = Number(values['gateway-port']);
  if (!Number.isInteger(gatewayPort) || gatewayPort < 0 || gatewayPort > 65535) {
    context.stderr.write(
      `spool dev: --gateway-port must be a port number, got "${values['gateway-port']}"\n`,
    );
    return 2;
  }
  const dataDirectory = path.resolve(values['data-dir']);
  mkdirSync(dataDirectory, { recursive: true });

  const ephemeralPorts = ['--grpc-port', '0', '--metrics-port', '0'];
  const processes: ClusterProcess[] = [];
  const profileDirectory =
    values['profile-dir'] === undefined ? undefined : path.resolve(values['profile-dir']);
  if (profileDirectory !== undefined) mkdirSync(profileDirectory, { recursive: true });
  const launch = (role: ServiceName, id: number, argv: string[]): ClusterProcess => {
    const profiled =
      profileDirectory !== undefined && (role === 'gateway' || role === 'storage-node');
    const nodeFlags = [
      ...spoolNodeFlags,
      ...(profiled ? ['--cpu-prof', `--cpu-prof-dir=${profileDirectory}`] : []),
    ];
    const child = spawn(process.execPath, [...nodeFlags, serviceEntryPoint(role), ...argv], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: process.env,
    });
    const entry: ClusterProcess = { role, id, child };
    processes.push(entry);
    return entry;
  };

  let stopping = false;
  // Stop in reverse order of dependence: clients of the data path first, the controller last,
  // so storage nodes can still hand their leaderships over (controlled shutdown) as they stop.
  const stopAll = async (): Promise<void> => {
    stopping = true;
    const order: ServiceName[] = ['gateway', 'coordinator', 'storage-node', 'controller'];
    for (const role of order) {
      await Promise.all(
        processes.filter((entry) => entry.role === role).map((entry) => stopProcess(entry.child)),
      );
    }
  };
  // The controller first: everything else is told where it is.
  const startAll = async (): Promise<void> => {
    const controller = launch('controller', 0, [
      ...ephemeralPorts,
      '--metadata-path',
      path.join(dataDirectory, 'controller', 'metadata.journal'),
    ]);
    await watchProcess(controller, context, () => stopping);
    const controllerAddress = `127.0.0.1:${controller.ports!.grpc}`;
    const others = [
      // A stable id per coordinator, so a restarted one is recognised by the controller.
      ...Array.from({ length: coordinators }, (_, id) =>
        launch('coordinator', id, [
          ...ephemeralPorts,
          '--coordinator-id',
          `coordinator-${id}`,
          '--controller-addresses',
          controllerAddress,
        ]),
      ),
      ...Array.from({ length: nodes }, (_, id) =>
        launch('storage-node', id, [
          ...ephemeralPorts,
          '--data-port',
          '0',
          '--broker-id',
          String(id),
          '--data-dir',
          path.join(dataDirectory, `storage-${id}`),
          '--controller-addresses',
          controllerAddress,
        ]),
      ),
      launch('gateway', 0, [
        '--grpc-port',
        String(gatewayPort),
        '--metrics-port',
        '0',
        '--controller-addresses',
        controllerAddress,
      ]),
    ];
    await Promise.all(others.map((entry) => watchProcess(entry, context, () => stopping)));
  };
  const timeout = new Promise<'timed-out'>((resolve) =>
    setTimeout(() => resolve('timed-out'), startTimeoutMs).unref(),
  );
  const outcome = await Promise.race([
    startAll().then(
      () => 'started' as const,
      () => 'failed' as const,
    ),
    timeout,
  ]);
  if (outcome !== 'started') {
    context.stderr.write(`spool dev: the cluster did not start (${outcome}); stopping what did\n`);
    await stopAll();
    return 1;
  }

  const clusterFile = path.join(dataDirectory, 'cluster.json');
  const description = {
    processes: processes.map((entry) => ({
      role: entry.role,
      id: entry.id,
      pid: entry.child.pid,
      ports: entry.ports,
    })),
  };
  writeFileSync(clusterFile, `${JSON.stringify(description, null, 2)}\n`);
  const gateway = processes.find((entry) => entry.role === 'gateway');
  context.stdout.write(
    `spool dev: ${processes.length} processes ready\n` +
      `  gateway   localhost:${gateway?.ports?.grpc}\n` +
      `  cluster   ${clusterFile} (every process's pid and ports, metrics included)\n` +
      `  Ctrl-C stops everything\n`,
  );

  return new Promise<number>((resolve) => {
    const onSignal = (): void => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      context.stdout.write('spool dev: stopping\n');
      stopAll().then(() => resolve(0));
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    for (const entry of processes) {
      entry.child.once('exit', (code, signal) => {
        if (stopping) return;
        context.stderr.write(
          `spool dev: ${label(entry)} exited (${signal ?? code}); stopping the cluster\n`,
        );
        onSignal();
      });
    }
  });
}

function label(entry: { role: string; id: number }): string {
  return entry.role === 'storage-node' || entry.role === 'coordinator'
    ? `${entry.role}-${entry.id}`
    : entry.role;
}

/** Streams a process's log lines with its label and resolves once it reports its ports. */
function watchProcess(
  entry: ClusterProcess,
  context: CommandContext,
  isStopping: () => boolean,
): Promise<void> {
  const prefix = `[${label(entry)}] `;
  return new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: entry.child.stdout! });
    lines.on('line', (line) => {
      context.stdout.write(`${prefix}${line}\n`);
      if (entry.ports !== undefined) return;
      try {
        const record = JSON.parse(line) as {
          event?: string;
          grpcPort?: number;
          metricsPort?: number;
          dataPort?: number;
        };
        if (record.dataPort !== undefined) entry.dataPort = record.dataPort;
        if (
          record.event === 'started' &&
          record.grpcPort !== undefined &&
          record.metricsPort !== undefined
        ) {
          entry.ports = {
            grpc: record.grpcPort,
            metrics: record.metricsPort,
            ...(entry.dataPort === undefined ? {} : { data: entry.dataPort }),
          };
          resolve();
        }
      } catch {
        // Not a log record: printed as it came.
      }
    });
    readline.createInterface({ input: entry.child.stderr! }).on('line', (line) => {
      context.stderr.write(`${prefix}${line}\n`);
    });
    entry.child.once('exit', (code, signal) => {
      if (entry.ports === undefined && !isStopping()) {
        reject(new Error(`${label(entry)} exited during start-up (${signal ?? code})`));
      }
    });
  });
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), stopTimeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

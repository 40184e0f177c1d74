import { UsageError } from './cli-errors';
import { formatCommandHelp, wantsHelp } from './command-help';
import type { CommandContext } from './commands';
import { devHelp, parseDevOptions, type DevOptions } from './dev-options';
import { describeOutOfSync, waitUntilInSync } from './dev-readiness';
import {
  clientGatewayAddress,
  clientPropertiesPathOf,
  createDevAdminUser,
  devClientSsl,
  newDevAdminCredentials,
  prepareDevCertificates,
  writeClientProperties,
} from './dev-security';
import { DevSupervisor } from './dev-supervisor';

/**
 * `spool dev`: a whole cluster on one machine, each service a separate process in a process
 * group of its own, supervised the way a StatefulSet supervises pods, so what runs locally
 * behaves as production does: a process that dies is restarted (dev-supervised-process.ts), the
 * rest keeps serving, and a terminal's Ctrl-C reaches `spool dev` alone, which stops the cluster
 * in order (dev-supervisor.ts). "Ready" means every partition in sync (dev-readiness.ts).
 *
 * Exit codes: 0 after an orderly stop, 1 if the cluster did not start or the stop was forced by
 * a second signal, 2 for a bad command line.
 */

/**
 * How long the processes may take to start and report their ports. A storage node reports its
 * ports once its logs are loaded: with tens of thousands of partitions, or after a crash that left
 * logs to recover, that takes minutes on a slow disk, and giving up then would throw the recovery
 * away. After `startNoticeMs` `spool dev` says who it is waiting for, and keeps waiting.
 */
const startTimeoutMs = 600_000;
const startNoticeMs = 30_000;
/** How long the cluster may take to get every partition in sync before `spool dev` says what is not. */
const readinessTimeoutMs = 60_000;

export async function runDevCluster(context: CommandContext): Promise<number> {
  if (wantsHelp(context.argv)) {
    context.stdout.write(formatCommandHelp(devHelp));
    return 0;
  }
  let options: DevOptions;
  try {
    options = parseDevOptions(context.argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    context.stderr.write(`spool dev: ${error.message}; see spool dev --help\n`);
    return 2;
  }
  return new DevRun(options, context).run();
}

/** One run of `spool dev`, from the first start to the last exit. */
class DevRun {
  private readonly startedAtMs = Date.now();
  private readonly supervisor: DevSupervisor;
  /** Aborted by the first SIGINT or SIGTERM: start-up and readiness stop waiting. */
  private readonly stopRequest = new AbortController();
  private forced = false;

  constructor(
    private readonly options: DevOptions,
    private readonly context: CommandContext,
  ) {
    this.supervisor = new DevSupervisor(options, context);
  }

  async run(): Promise<number> {
    if (this.options.secure) prepareDevCertificates(this.options.dataDirectory);
    const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
    const onSignal = (signal: NodeJS.Signals): void => this.onSignal(signal);
    for (const signal of signals) process.on(signal, onSignal);
    try {
      const started = await this.start();
      if (started) {
        await this.reportReadiness();
        await this.stopRequested();
      }
      await this.stopInOrder();
      if (this.forced) return 1;
      return started || this.stopRequest.signal.aborted ? 0 : 1;
    } finally {
      for (const signal of signals) process.off(signal, onSignal);
    }
  }

  /** The first signal stops in order; a second one kills every process group at once. */
  private onSignal(signal: NodeJS.Signals): void {
    if (!this.stopRequest.signal.aborted) {
      this.context.stdout.write(
        `spool dev: ${signal}: stopping in order (Ctrl-C again to kill everything at once)\n`,
      );
      this.stopRequest.abort();
      return;
    }
    if (this.forced) return;
    this.forced = true;
    this.context.stderr.write(`spool dev: second ${signal}: killing every process (SIGKILL)\n`);
    void this.supervisor.killAll();
  }

  /** True once every process reported its ports; false (after saying why) otherwise. */
  private async start(): Promise<boolean> {
    const startup = this.supervisor.startAll();
    startup.catch(() => {});
    let timer: NodeJS.Timeout | undefined;
    const notice = setTimeout(() => {
      const waiting = this.supervisor.processes.filter((process) => process.state === 'starting');
      if (waiting.length === 0) return;
      this.context.stderr.write(
        `spool dev: still waiting for ${waiting.map((process) => process.name).join(', ')} ` +
          `after ${startNoticeMs / 1000} s (a storage node loads or recovers its logs before it ` +
          `listens); giving up after ${startTimeoutMs / 1000} s\n`,
      );
    }, startNoticeMs);
    const outcome = await Promise.race([
      startup.then(
        () => ({ kind: 'started' as const }),
        (error: unknown) => ({ kind: 'failed' as const, error }),
      ),
      new Promise<{ kind: 'timed-out' }>((resolve) => {
        timer = setTimeout(() => resolve({ kind: 'timed-out' }), startTimeoutMs);
      }),
      this.stopRequested().then(() => ({ kind: 'stopped' as const })),
    ]);
    clearTimeout(timer);
    clearTimeout(notice);
    if (outcome.kind === 'started') return true;
    if (outcome.kind === 'failed') {
      const reason = outcome.error instanceof Error ? outcome.error.message : String(outcome.error);
      this.context.stderr.write(
        `spool dev: the cluster did not start: ${reason}; stopping what did\n`,
      );
    } else if (outcome.kind === 'timed-out') {
      const waiting = this.supervisor.processes.filter((process) => process.state === 'starting');
      this.context.stderr.write(
        `spool dev: the cluster did not start in ${startTimeoutMs / 1000} s ` +
          `(${waiting.map((process) => process.name).join(', ')} never reported its ports); ` +
          'stopping what did\n',
      );
    }
    return false;
  }

  /** Prints "ready" once every partition is in sync, or what is not after the timeout. */
  private async reportReadiness(): Promise<void> {
    const outcome = await waitUntilInSync({
      gatewayAddress: this.options.secure
        ? clientGatewayAddress(this.supervisor.gatewayPort)
        : this.supervisor.gatewayAddress,
      ...(this.options.secure ? { ssl: devClientSsl(this.options.dataDirectory) } : {}),
      brokerIds: Array.from({ length: this.options.storageNodeCount }, (_, id) => id),
      timeoutMs: readinessTimeoutMs,
      signal: this.stopRequest.signal,
    });
    if (outcome.kind === 'aborted') return;
    const clientProperties = this.options.secure ? await this.prepareAdminUser() : undefined;
    const elapsed = `${((Date.now() - this.startedAtMs) / 1000).toFixed(1)} s`;
    if (outcome.kind === 'timed-out') {
      const what =
        outcome.report === undefined
          ? `the gateway did not answer (${errorMessage(outcome.lastError)})`
          : describeOutOfSync(outcome.report);
      this.context.stderr.write(
        `spool dev: not in sync after ${elapsed}: ${what}; the cluster keeps running, ` +
          '`spool cluster status` shows its state\n',
      );
      return;
    }
    const { partitionsInSync } = outcome.report;
    const processCount = this.supervisor.processes.length;
    this.context.stdout.write(
      `spool dev: ${processCount} processes ready in ${elapsed}, ` +
        `${partitionsInSync} partition${partitionsInSync === 1 ? '' : 's'} in sync\n` +
        `  gateway   ${this.supervisor.gatewayAddress}\n` +
        `  kafka     ${this.supervisor.kafkaBootstrapAddress} (bootstrap.servers)\n` +
        `  cluster   ${this.supervisor.clusterFilePath} (every process's pid and ports)\n` +
        (clientProperties === undefined
          ? ''
          : `  clients   ${clientProperties} (SASL_SSL as user admin, SCRAM-SHA-512: ` +
            `spool --command-config ${clientProperties} ...)\n`) +
        `  restart   ${this.options.restartPolicy} (a process that exits ` +
        `${this.options.restartPolicy === 'never' ? 'stays down' : 'is restarted'})\n` +
        `  Ctrl-C stops everything\n`,
    );
  }

  /** --secure: the admin user and client.properties (dev-security.ts); undefined on failure. */
  private async prepareAdminUser(): Promise<string | undefined> {
    const admin = newDevAdminCredentials();
    const { dataDirectory } = this.options;
    try {
      await createDevAdminUser(dataDirectory, this.supervisor.gatewayPort, admin);
    } catch (error) {
      this.context.stderr.write(
        `spool dev: could not create the admin user: ${errorMessage(error)}; ` +
          `${clientPropertiesPathOf(dataDirectory)} is not written\n`,
      );
      return undefined;
    }
    return writeClientProperties(dataDirectory, this.supervisor.gatewayPort, admin);
  }

  private async stopInOrder(): Promise<void> {
    const stopStartedAtMs = Date.now();
    await this.supervisor.stopInOrder();
    if (this.forced) return;
    this.context.stdout.write(
      `spool dev: stopped in ${((Date.now() - stopStartedAtMs) / 1000).toFixed(1)} s\n`,
    );
  }

  private stopRequested(): Promise<void> {
    const { signal } = this.stopRequest;
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) =>
      signal.addEventListener('abort', () => resolve(), { once: true }),
    );
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

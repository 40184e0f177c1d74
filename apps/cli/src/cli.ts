import { pathToFileURL } from 'node:url';
import {
  cliVersion,
  serviceEntryPoint,
  serviceNames,
  type Command,
  type CommandContext,
} from './commands';
import { benchUsage, runBenchCommand } from './bench-command';
import { runReportingErrors } from './cli-errors';
import { wantsVerbose } from './cli-options';
import { runClusterCommand } from './cluster-command';
import { consumeUsage, runConsumeCommand } from './consume-command';
import { runDevCluster } from './dev-cluster';
import { runGroupCommand } from './group-commands';
import { produceUsage, runProduceCommand } from './produce-command';
import { runTopicCommand } from './topic-commands';

/** A command that talks to the gateway: its errors become one line and an exit code. */
function gatewayCommand(
  summary: string,
  run: (context: CommandContext) => Promise<number>,
): Command {
  return {
    summary,
    run: (context) =>
      runReportingErrors(context.stderr, wantsVerbose(context.argv), () => run(context)),
  };
}

const commands: Readonly<Record<string, Command>> = {
  topic: gatewayCommand(
    'Create, list, describe, delete topics and alter their configs (spool topic).',
    runTopicCommand,
  ),
  group: gatewayCommand(
    'List, describe (with lag), delete consumer groups and reset their offsets (spool group).',
    runGroupCommand,
  ),
  produce: gatewayCommand(`Send stdin's lines as records: ${produceUsage}`, runProduceCommand),
  consume: gatewayCommand(`Print a topic's records: ${consumeUsage}`, runConsumeCommand),
  bench: gatewayCommand(`Measure throughput and latency: ${benchUsage}`, runBenchCommand),
  cluster: gatewayCommand(
    'Brokers, the active controller and partition health (spool cluster status).',
    runClusterCommand,
  ),
  dev: {
    summary: 'Start a whole local cluster as separate processes (Ctrl-C stops it).',
    run: (context) => runDevCluster(context),
  },
  ...Object.fromEntries(
    serviceNames.map((service) => [
      service,
      {
        summary: `Run the ${service} service in this process (flags: spool ${service} --help).`,
        run: async (context: CommandContext) => {
          const entryPoint = serviceEntryPoint(service);
          process.argv = [process.argv[0]!, entryPoint, ...context.argv];
          await import(pathToFileURL(entryPoint).href);
          // The service keeps the process alive and exits on SIGTERM; report nothing here.
          return new Promise<number>(() => {});
        },
      } satisfies Command,
    ]),
  ),
};

function usage(): string {
  const width = Math.max(...Object.keys(commands).map((name) => name.length));
  const lines = Object.entries(commands).map(
    ([name, command]) => `  ${name.padEnd(width)}  ${command.summary}`,
  );
  return (
    `usage: spool <command> [flags]\n\ncommands:\n${lines.join('\n')}\n\n` +
    `global flags of the gateway commands:\n` +
    `  --gateway host:port  the gateway (or $SPOOL_GATEWAY; localhost:9090 by default)\n` +
    `  --json               machine-readable output\n` +
    `  --verbose            stack traces with errors\n\n` +
    `  --version  print the version\n` +
    `exit codes: 0 ok, 1 the operation failed, 2 bad usage, 3 the gateway is unreachable\n`
  );
}

/** Runs the command line and resolves with the process exit code. */
export async function runCli(
  argv: readonly string[],
  context: Omit<CommandContext, 'argv'>,
): Promise<number> {
  const [name, ...rest] = moveLeadingGlobalFlags(argv);
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    context.stdout.write(usage());
    return name === undefined ? 1 : 0;
  }
  if (name === '--version') {
    context.stdout.write(`${cliVersion()}\n`);
    return 0;
  }
  const command = commands[name];
  if (command === undefined) {
    context.stderr.write(`spool: unknown command "${name}"; run \`spool help\` for the list\n`);
    return 1;
  }
  return command.run({ ...context, argv: rest });
}

/** `spool --json topic list` reads as `spool topic list --json`: commands parse global flags. */
function moveLeadingGlobalFlags(argv: readonly string[]): string[] {
  const leading: string[] = [];
  let index = 0;
  while (index < argv.length) {
    const argument = argv[index]!;
    if (argument === '--json' || argument === '--verbose' || argument.startsWith('--gateway=')) {
      leading.push(argument);
      index += 1;
    } else if (argument === '--gateway' && index + 1 < argv.length) {
      leading.push(argument, argv[index + 1]!);
      index += 2;
    } else {
      break;
    }
  }
  const [name, ...rest] = argv.slice(index);
  return name === undefined ? [] : [name, ...rest, ...leading];
}

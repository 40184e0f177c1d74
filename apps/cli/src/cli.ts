import { pathToFileURL } from 'node:url';
import {
  cliVersion,
  serviceEntryPoint,
  serviceNames,
  type Command,
  type CommandContext,
} from './commands';
import { benchHelp, benchSubcommandHelps, runBenchCommand } from './bench-command';
import { ExitCode, runReportingErrors, usageErrorCode } from './cli-errors';
import { globalFlags, wantsVerbose } from './cli-options';
import { aclHelp, aclSubcommandHelps, runAclCommand } from './acl-command';
import { brokerHelp, brokerSubcommandHelps, runBrokerCommand } from './broker-command';
import { runUserCommand, userHelp, userSubcommandHelps } from './user-commands';
import { clusterHelp, clusterSubcommandHelps, runClusterCommand } from './cluster-command';
import {
  formatCommandHelp,
  formatFlags,
  joinNegativeValues,
  toUsageError,
  wantsHelp,
  type CommandHelp,
} from './command-help';
import { consumeHelp, runConsumeCommand } from './consume-command';
import { runDevCluster } from './dev-cluster';
import { groupHelp, groupSubcommandHelps, runGroupCommand } from './group-commands';
import {
  partitionsHelp,
  partitionsSubcommandHelps,
  runPartitionsCommand,
} from './partitions-command';
import { produceHelp, runProduceCommand } from './produce-command';
import { runTlsCommand, tlsHelp, tlsSubcommandHelps } from './tls-command';
import { runTopicCommand, topicHelp, topicSubcommandHelps } from './topic-commands';

/**
 * The table of `spool`'s commands and the one place that dispatches a command line: help in
 * every form (`spool help <command> [subcommand]`, `--help` or `-h` anywhere before `--`, and
 * the word `help` where a subcommand or the first argument goes), then the command itself.
 *
 * `spool produce help` prints help, as `spool topic help` does: a bare `help` after a command is
 * taken for a request for help, never for a topic or group named "help", which is written after
 * `--` (`spool produce -- help`). Git and kubectl take such a word as data for their leaf commands;
 * here a produce that silently waits on stdin for a topic nobody meant is the worse surprise.
 *
 * Exit codes, on every path (cli-errors.ts): 0 ok, 1 failed, 2 usage, 3 the gateway unreachable.
 */

/** A command that talks to the gateway: its errors become one line and an exit code. */
function gatewayCommand(
  help: CommandHelp,
  run: (context: CommandContext) => Promise<number>,
  subcommands?: Readonly<Record<string, CommandHelp>>,
): Command {
  return {
    summary: help.summary,
    help,
    ...(subcommands === undefined ? {} : { subcommands }),
    run: (context) =>
      runReportingErrors(context.stderr, wantsVerbose(context.argv), () => run(context)),
  };
}

/** node:util parseArgs errors, from a command that parses its own line (`spool dev`). */
function isParseArgsError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_');
}

const commands: Readonly<Record<string, Command>> = {
  topic: gatewayCommand(topicHelp, runTopicCommand, topicSubcommandHelps),
  group: gatewayCommand(groupHelp, runGroupCommand, groupSubcommandHelps),
  produce: gatewayCommand(produceHelp, runProduceCommand),
  consume: gatewayCommand(consumeHelp, runConsumeCommand),
  bench: gatewayCommand(benchHelp, runBenchCommand, benchSubcommandHelps),
  cluster: gatewayCommand(clusterHelp, runClusterCommand, clusterSubcommandHelps),
  partitions: gatewayCommand(partitionsHelp, runPartitionsCommand, partitionsSubcommandHelps),
  broker: gatewayCommand(brokerHelp, runBrokerCommand, brokerSubcommandHelps),
  acl: gatewayCommand(aclHelp, runAclCommand, aclSubcommandHelps),
  user: gatewayCommand(userHelp, runUserCommand, userSubcommandHelps),
  tls: gatewayCommand(tlsHelp, runTlsCommand, tlsSubcommandHelps),
  dev: {
    summary: 'Start a whole local cluster as separate processes (Ctrl-C stops it).',
    // A bad flag is a usage error (exit 2) whichever parser found it.
    run: (context) =>
      runReportingErrors(context.stderr, wantsVerbose(context.argv), () =>
        runDevCluster(context).catch((error: unknown) => {
          throw isParseArgsError(error) ? toUsageError(error) : error;
        }),
      ),
  },
  ...Object.fromEntries(
    serviceNames.map((service) => [
      service,
      {
        summary: `Run the ${service} service in this process (flags: spool ${service} --help).`,
        run: async (context: CommandContext) => {
          const entryPoint = serviceEntryPoint(service);
          // Every flag of a service takes a value, a negative number included.
          const argv = joinNegativeValues(context.argv, () => true);
          process.argv = [process.argv[0]!, entryPoint, ...argv];
          await import(pathToFileURL(entryPoint).href);
          // The service keeps the process alive and exits on SIGTERM; report nothing here.
          return new Promise<number>(() => {});
        },
      } satisfies Command,
    ]),
  ),
};

/** Every command and subcommand with the flags its help must name, for tests and docs. */
export interface CommandListing {
  readonly path: readonly string[];
  /** flags: its own and the global ones; undefined for a command that answers --help itself. */
  readonly flags: readonly string[] | undefined;
}

export function listCommands(): CommandListing[] {
  const listings: CommandListing[] = [];
  const flagsOf = (help: CommandHelp): string[] => [
    ...Object.keys(help.flags),
    ...Object.keys(globalFlags),
  ];
  for (const [name, command] of Object.entries(commands)) {
    listings.push({
      path: [name],
      flags: command.help === undefined ? undefined : flagsOf(command.help),
    });
    for (const [subcommand, help] of Object.entries(command.subcommands ?? {})) {
      listings.push({ path: [name, subcommand], flags: flagsOf(help) });
    }
  }
  return listings;
}

function usage(): string {
  const width = Math.max(...Object.keys(commands).map((name) => name.length));
  const lines = Object.entries(commands).map(
    ([name, command]) => `  ${name.padEnd(width)}  ${command.summary}`,
  );
  return (
    `usage: spool <command> [subcommand] [flags]\n\ncommands:\n${lines.join('\n')}\n\n` +
    `global flags of the gateway commands:\n${formatFlags(globalFlags)}\n` +
    `  spool --version                        print the version\n` +
    `  spool help <command> [subcommand]      a command's usage, flags and an example\n` +
    `  spool <command> [subcommand] --help    the same (also -h, or help in place of the\n` +
    `                                         subcommand; a topic named help goes after --)\n\n` +
    `exit codes: 0 ok, 1 the operation failed, 2 bad usage, 3 the gateway is unreachable\n`
  );
}

/** Runs the command line and resolves with the process exit code. */
export async function runCli(
  argv: readonly string[],
  context: Omit<CommandContext, 'argv'>,
): Promise<number> {
  const [name, ...rest] = moveLeadingGlobalFlags(argv);
  if (name === undefined) {
    context.stderr.write(usage());
    return ExitCode.UsageError;
  }
  if (name === '--help' || name === '-h') {
    context.stdout.write(usage());
    return ExitCode.Ok;
  }
  if (name === 'help') return printHelp(rest[0], rest[1], context);
  if (name === '--version') {
    context.stdout.write(`${cliVersion()}\n`);
    return ExitCode.Ok;
  }
  const command = commands[name];
  if (command === undefined) return unknownCommand(name, context);
  if (asksForHelp(command, rest)) {
    const subcommand =
      rest[0]?.startsWith('-') === false && rest[0] !== 'help' ? rest[0] : undefined;
    return printHelp(name, subcommand, context);
  }
  return command.run({ ...context, argv: rest });
}

/** `--help`/`-h` before `--`, or `help` where the subcommand or the first argument goes. */
function asksForHelp(command: Command, argv: readonly string[]): boolean {
  if (wantsHelp(argv)) return true;
  if (argv[0] === 'help') return true;
  return command.subcommands?.[argv[0] ?? ''] !== undefined && argv[1] === 'help';
}

/** `spool help [command [subcommand]]`: the help on stdout, exit 0; an unknown name exits 2. */
async function printHelp(
  name: string | undefined,
  subcommandName: string | undefined,
  context: Omit<CommandContext, 'argv'>,
): Promise<number> {
  if (name === undefined) {
    context.stdout.write(usage());
    return ExitCode.Ok;
  }
  const command = commands[name];
  if (command === undefined) return unknownCommand(name, context);
  if (command.help === undefined) return command.run({ ...context, argv: ['--help'] });
  const shared = [{ title: 'global flags', flags: globalFlags }];
  if (command.subcommands === undefined || subcommandName === undefined) {
    const list =
      command.subcommands === undefined ? '' : formatSubcommands(name, command.subcommands);
    context.stdout.write(`${formatCommandHelp(command.help, shared)}${list}`);
    return ExitCode.Ok;
  }
  const subcommand = command.subcommands[subcommandName];
  if (subcommand === undefined) {
    const expected = Object.keys(command.subcommands).join(', ');
    context.stderr.write(
      `spool: ${usageErrorCode}: unknown ${name} subcommand "${subcommandName}": ` +
        `expected ${expected}\n`,
    );
    return ExitCode.UsageError;
  }
  context.stdout.write(formatCommandHelp(subcommand, shared));
  return ExitCode.Ok;
}

function formatSubcommands(name: string, subcommands: Readonly<Record<string, CommandHelp>>) {
  const width = Math.max(...Object.keys(subcommands).map((subcommand) => subcommand.length));
  return (
    `\nsubcommands (spool ${name} <subcommand> --help for each):\n` +
    Object.entries(subcommands)
      .map(([subcommand, help]) => `  ${subcommand.padEnd(width)}  ${help.summary}\n`)
      .join('')
  );
}

function unknownCommand(name: string, context: Omit<CommandContext, 'argv'>): ExitCode {
  context.stderr.write(`spool: unknown command "${name}"; run \`spool help\` for the list\n`);
  return ExitCode.UsageError;
}

/** `spool --json topic list` reads as `spool topic list --json`: commands parse global flags. */
function moveLeadingGlobalFlags(argv: readonly string[]): string[] {
  const leading: string[] = [];
  let index = 0;
  while (index < argv.length) {
    const argument = argv[index]!;
    if (
      argument === '--json' ||
      argument === '--verbose' ||
      argument.startsWith('--gateway=') ||
      argument.startsWith('--command-config=')
    ) {
      leading.push(argument);
      index += 1;
    } else if (
      (argument === '--gateway' || argument === '--command-config') &&
      index + 1 < argv.length
    ) {
      leading.push(argument, argv[index + 1]!);
      index += 2;
    } else {
      break;
    }
  }
  const [name, ...rest] = argv.slice(index);
  if (name === undefined) return [];
  // Before a `--`, after which every word is an argument.
  const end = rest.indexOf('--');
  return end < 0
    ? [name, ...rest, ...leading]
    : [name, ...rest.slice(0, end), ...leading, ...rest.slice(end)];
}

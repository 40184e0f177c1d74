import { pathToFileURL } from 'node:url';
import {
  cliVersion,
  serviceEntryPoint,
  serviceNames,
  type Command,
  type CommandContext,
} from './commands';
import { runDevCluster } from './dev-cluster';

const commands: Readonly<Record<string, Command>> = {
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
  return `usage: spool <command> [flags]\n\ncommands:\n${lines.join('\n')}\n\n  --version  print the version\n`;
}

/** Runs the command line and resolves with the process exit code. */
export async function runCli(
  argv: readonly string[],
  context: Omit<CommandContext, 'argv'>,
): Promise<number> {
  const [name, ...rest] = argv;
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

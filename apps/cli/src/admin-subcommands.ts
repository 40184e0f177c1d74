import type { Admin } from '@spool/client';
import { UsageError } from './cli-errors';
import { connectSpool, parseCommandArgs, type ParsedCommand } from './cli-options';
import type { CommandHelp } from './command-help';
import type { CommandContext } from './commands';

/**
 * The shape shared by `spool topic ...` and `spool group ...`: a table of subcommands, each
 * with its help (usage line, flags, examples: the flags are parsed from the same declaration)
 * and a run on the admin client. One place parses the subcommand name and flags, opens the
 * admin client and always closes it.
 */
export interface AdminSubcommand {
  readonly help: CommandHelp;
  readonly run: (admin: Admin, parsed: ParsedCommand, context: CommandContext) => Promise<number>;
}

export type AdminSubcommands = Readonly<Record<string, AdminSubcommand>>;

/** Runs `spool <command> <subcommand> ...`; resolves with the exit code or throws to be reported. */
export async function runAdminSubcommand(
  command: string,
  subcommands: AdminSubcommands,
  context: CommandContext,
): Promise<number> {
  const [name, ...argv] = context.argv;
  const subcommand = name === undefined ? undefined : subcommands[name];
  if (subcommand === undefined) {
    throw new UsageError(
      name === undefined
        ? `${command} needs a subcommand: ${Object.keys(subcommands).join(', ')}`
        : `unknown ${command} subcommand "${name}": expected ${Object.keys(subcommands).join(', ')}`,
    );
  }
  const parsed = parseCommandArgs(argv, subcommand.help.flags, context.env ?? process.env);
  const admin = connectSpool(parsed.global).admin();
  try {
    return await subcommand.run(admin, parsed, context);
  } finally {
    await admin.disconnect();
  }
}

/** The help of each subcommand, by name, for the command table. */
export function subcommandHelps(
  subcommands: AdminSubcommands,
): Readonly<Record<string, CommandHelp>> {
  return Object.fromEntries(Object.entries(subcommands).map(([name, { help }]) => [name, help]));
}

import type { Admin } from '@spool/client';
import { UsageError } from './cli-errors';
import {
  connectSpool,
  parseCommandArgs,
  type OptionSpecs,
  type ParsedCommand,
} from './cli-options';
import type { CommandContext } from './commands';

/**
 * The shape shared by `spool topic ...` and `spool group ...`: a table of subcommands, each
 * with its usage line, its flags and a run on the admin client. One place parses the
 * subcommand name and flags, opens the admin client and always closes it.
 */
export interface AdminSubcommand {
  readonly usage: string;
  readonly options: OptionSpecs;
  readonly run: (admin: Admin, parsed: ParsedCommand, context: CommandContext) => Promise<number>;
}

export type AdminSubcommands = Readonly<Record<string, AdminSubcommand>>;

export function adminSubcommandsUsage(subcommands: AdminSubcommands): string {
  return `usage:\n${Object.values(subcommands)
    .map((subcommand) => `  ${subcommand.usage}`)
    .join('\n')}\n`;
}

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
  const parsed = parseCommandArgs(argv, subcommand.options, context.env ?? process.env);
  const admin = connectSpool(parsed.global).admin();
  try {
    return await subcommand.run(admin, parsed, context);
  } finally {
    await admin.disconnect();
  }
}

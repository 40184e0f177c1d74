import { parseArgs, type ParseArgsConfig } from 'node:util';
import { assert } from '@spool/common';
import { UsageError } from './cli-errors';

/**
 * Each command of `spool` declares its flags once, as a table of `FlagDeclaration`s; the parser
 * (node:util parseArgs, strict) and the `--help` text both come from that table, so the help
 * cannot name a flag the parser refuses, or leave out one it takes.
 *
 * What the parser adds to parseArgs:
 * - a negative number is a value, not a flag: `--throughput -1` reads as `--throughput=-1`;
 * - its errors are usage errors (exit 2) that name the flag the way the user typed it;
 * - a declared `default` is filled in, so the code and the help read the same default.
 *
 * Help: `-h` or `--help` anywhere before `--` asks for it (`wantsHelp`), as in git and kubectl.
 */
export interface FlagDeclaration {
  readonly type: 'string' | 'boolean';
  /** multiple: the flag may be repeated; its values come as an array. */
  readonly multiple?: boolean;
  /** valueName: the placeholder of a string flag's value in the help, such as N, MS or key=value. */
  readonly valueName?: string;
  /** default: given to the parser when the flag is absent, and shown in the help. */
  readonly default?: string;
  /**
   * defaultText: what the help says applies when the flag is absent and the code, not the
   * parser, decides it ("$SPOOL_GATEWAY, else localhost:9090", "the cluster's num.partitions").
   */
  readonly defaultText?: string;
  /** description: one line, the flag's meaning. */
  readonly description: string;
}

export type FlagDeclarations = Readonly<Record<string, FlagDeclaration>>;

/** What `spool <path> --help` prints: usage, a summary, every flag, examples. */
export interface CommandHelp {
  /** path: the words after `spool`, such as ['topic', 'create']. */
  readonly path: readonly string[];
  /** usage: the synopsis, starting with `spool`. */
  readonly usage: string;
  /** summary: one sentence, also the command's line in its parent's list. */
  readonly summary: string;
  /** details: further lines printed after the summary; none if absent. */
  readonly details?: readonly string[];
  readonly flags: FlagDeclarations;
  /** examples: complete command lines, at least one. */
  readonly examples: readonly string[];
}

export interface ParsedFlags {
  readonly values: Readonly<Record<string, string | boolean | string[] | boolean[] | undefined>>;
  readonly positionals: readonly string[];
  /** given: the flags on the line, as opposed to those whose value is the declared default. */
  readonly given: ReadonlySet<string>;
}

/** The flags every command answers, whatever it declares. */
export const helpFlags: FlagDeclarations = {
  help: { type: 'boolean', description: 'print this help and exit' },
};

/** True if the line asks for help: `-h` or `--help` before any `--`. */
export function wantsHelp(argv: readonly string[]): boolean {
  for (const argument of argv) {
    if (argument === '--') return false;
    if (argument === '--help' || argument === '-h') return true;
  }
  return false;
}

/** A negative number, which parseArgs would otherwise take for a short flag. */
const negativeNumber = /^-\d+(?:\.\d+)?$/;

/**
 * `--flag -1` as `--flag=-1` for every string flag, so a negative number is the flag's value;
 * anything else starting with "-" stays a flag, as parseArgs decides.
 */
export function joinNegativeValues(
  argv: readonly string[],
  takesValue: (flag: string) => boolean,
): string[] {
  const joined: string[] = [];
  for (let index = 0; index < argv.length; index++) {
    const argument = argv[index]!;
    if (argument === '--') {
      joined.push(...argv.slice(index));
      break;
    }
    const next = argv[index + 1];
    if (
      argument.startsWith('--') &&
      !argument.includes('=') &&
      takesValue(argument.slice(2)) &&
      next !== undefined &&
      negativeNumber.test(next)
    ) {
      joined.push(`${argument}=${next}`);
      index += 1;
    } else {
      joined.push(argument);
    }
  }
  return joined;
}

/** The parseArgs options of a declaration table. */
export function toParseArgsOptions(
  flags: FlagDeclarations,
): NonNullable<ParseArgsConfig['options']> {
  const options: NonNullable<ParseArgsConfig['options']> = {};
  for (const [name, flag] of Object.entries(flags)) {
    options[name] =
      flag.type === 'boolean'
        ? { type: 'boolean', ...(flag.multiple === true ? { multiple: true } : {}) }
        : {
            type: 'string',
            ...(flag.multiple === true ? { multiple: true } : {}),
            ...(flag.default === undefined ? {} : { default: flag.default }),
          };
  }
  return options;
}

/** Parses `argv` against the declared flags; a mistake is a UsageError naming the flag. */
export function parseFlags(argv: readonly string[], flags: FlagDeclarations): ParsedFlags {
  const takesValue = (name: string): boolean => flags[name]?.type === 'string';
  try {
    const parsed = parseArgs({
      args: joinNegativeValues(argv, takesValue),
      options: toParseArgsOptions(flags),
      strict: true,
      allowPositionals: true,
      tokens: true,
    });
    const given = new Set<string>();
    for (const token of parsed.tokens) if (token.kind === 'option') given.add(token.name);
    return {
      values: parsed.values as ParsedFlags['values'],
      positionals: parsed.positionals,
      given,
    };
  } catch (error) {
    throw toUsageError(error);
  }
}

/** The value of a flag with a declared default, which parsing always fills in. */
export function declared<Value>(value: Value | undefined): Value {
  assert(value !== undefined, 'a flag with a declared default has a value once parsed');
  return value;
}

/** parseArgs errors say `Unknown option '--x'`; ours name the flag the way users typed it. */
export function toUsageError(error: unknown): UsageError {
  if (error instanceof UsageError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: string }).code;
  const flag = /'(-[^' ]*)/.exec(message)?.[1];
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && flag !== undefined) {
    return new UsageError(`unknown flag ${flag}`);
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && flag !== undefined) {
    if (message.includes('ambiguous')) {
      return new UsageError(`flag ${flag} has a value starting with "-": write ${flag}=VALUE`);
    }
    return new UsageError(
      `flag ${flag} ${message.includes('missing') ? 'needs a value' : 'takes no value'}`,
    );
  }
  return new UsageError(message);
}

/** One line per flag: `  --name VALUE  meaning (default X)`, names aligned. */
export function formatFlags(flags: FlagDeclarations): string {
  const entries = Object.entries(flags).map(([name, flag]) => {
    const valueName = flag.type === 'string' ? ` ${flag.valueName ?? 'VALUE'}` : '';
    const short = name === 'help' ? '-h, ' : '';
    const repeat = flag.multiple === true ? '...' : '';
    return { synopsis: `${short}--${name}${valueName}${repeat}`, flag };
  });
  const width = Math.max(...entries.map((entry) => entry.synopsis.length));
  return entries
    .map(({ synopsis, flag }) => {
      const fallback = defaultOf(flag);
      const suffix = fallback === undefined ? '' : ` (default ${fallback})`;
      return `  ${synopsis.padEnd(width)}  ${flag.description}${suffix}\n`;
    })
    .join('');
}

function defaultOf(flag: FlagDeclaration): string | undefined {
  if (flag.defaultText !== undefined) return flag.defaultText;
  if (flag.default !== undefined) return flag.default === '' ? '""' : flag.default;
  if (flag.type === 'boolean') return undefined;
  return flag.multiple === true ? 'none' : undefined;
}

/**
 * The whole help of a command: usage, summary, its flags, the flags it shares with other
 * commands (global, such as --gateway), examples.
 */
export function formatCommandHelp(
  help: CommandHelp,
  sharedFlags: { readonly title: string; readonly flags: FlagDeclarations }[] = [],
): string {
  const sections = [
    `usage: ${help.usage}\n`,
    `${help.summary}\n${(help.details ?? []).map((line) => `${line}\n`).join('')}`,
  ];
  if (Object.keys(help.flags).length > 0) sections.push(`flags:\n${formatFlags(help.flags)}`);
  for (const shared of sharedFlags) {
    sections.push(`${shared.title}:\n${formatFlags(shared.flags)}`);
  }
  sections.push(
    `${help.examples.length === 1 ? 'example' : 'examples'}:\n` +
      help.examples.map((example) => `  ${example}\n`).join(''),
  );
  return sections.join('\n');
}

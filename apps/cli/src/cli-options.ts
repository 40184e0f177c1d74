import { parseArgs, type ParseArgsConfig } from 'node:util';
import { Spool } from '@spool/client';
import { UsageError } from './cli-errors';

/**
 * Flags every gateway command takes, and the one way commands parse their flags: node:util
 * parseArgs in strict mode, with its errors turned into usage errors (exit 2) that name the flag.
 */
export const gatewayEnvironmentVariable = 'SPOOL_GATEWAY';
export const gatewayDefault = 'localhost:9090';

export interface GlobalOptions {
  /** gateway: the gateway's `host:port`, from --gateway, $SPOOL_GATEWAY or the default. */
  readonly gateway: string;
  /** json: machine-readable output. */
  readonly json: boolean;
  /** verbose: stack traces with errors. */
  readonly verbose: boolean;
}

const globalOptionSpecs = {
  gateway: { type: 'string' },
  json: { type: 'boolean', default: false },
  verbose: { type: 'boolean', default: false },
} as const satisfies NonNullable<ParseArgsConfig['options']>;

export type OptionSpecs = NonNullable<ParseArgsConfig['options']>;

export interface ParsedCommand {
  readonly global: GlobalOptions;
  readonly values: Readonly<Record<string, string | boolean | string[] | boolean[] | undefined>>;
  readonly positionals: readonly string[];
}

/** The global flags anywhere on the line, and the command's own; positionals as given. */
export function parseCommandArgs(
  argv: readonly string[],
  options: OptionSpecs,
  environment: NodeJS.ProcessEnv,
): ParsedCommand {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: { ...globalOptionSpecs, ...options },
      strict: true,
      allowPositionals: true,
    });
  } catch (error) {
    throw toUsageError(error);
  }
  const values = parsed.values as ParsedCommand['values'];
  const gateway =
    (values.gateway as string | undefined) ??
    environment[gatewayEnvironmentVariable] ??
    gatewayDefault;
  checkGatewayAddress(
    gateway,
    values.gateway === undefined ? `$${gatewayEnvironmentVariable}` : '--gateway',
  );
  return {
    global: { gateway, json: values.json === true, verbose: values.verbose === true },
    values,
    positionals: parsed.positionals,
  };
}

/** True if the line asks for stack traces, for errors raised before parsing finished. */
export function wantsVerbose(argv: readonly string[]): boolean {
  return argv.includes('--verbose');
}

function checkGatewayAddress(address: string, source: string): void {
  const match = /^(.+):(\d+)$/.exec(address);
  const port = match === null ? Number.NaN : Number(match[2]);
  if (match === null || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new UsageError(`${source} must be host:port, got "${address}"`);
  }
}

/** parseArgs errors say `Unknown option '--x'`; ours name the flag the way users typed it. */
function toUsageError(error: unknown): UsageError {
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

/** Exactly `count` positionals, named for the message: `spool topic create NAME`. */
export function requirePositionals(
  positionals: readonly string[],
  names: readonly string[],
  usage: string,
): string[] {
  if (positionals.length < names.length) {
    throw new UsageError(`missing ${names[positionals.length]}; usage: ${usage}`);
  }
  if (positionals.length > names.length) {
    throw new UsageError(`unexpected argument "${positionals[names.length]}"; usage: ${usage}`);
  }
  return [...positionals];
}

/** An integer flag within bounds, or a usage error naming the flag and the value. */
export function integerFlag(
  values: ParsedCommand['values'],
  name: string,
  bounds: { min: number; max: number },
): number | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (typeof raw !== 'string' || !/^-?\d+$/.test(raw) || value < bounds.min || value > bounds.max) {
    throw new UsageError(
      `--${name} must be an integer from ${bounds.min} to ${bounds.max}, got "${String(raw)}"`,
    );
  }
  return value;
}

/** Repeated `--flag key=value` into entries, or a usage error naming the flag. */
export function keyValueFlags(
  values: ParsedCommand['values'],
  name: string,
): { name: string; value: string }[] {
  const raw = (values[name] as string[] | undefined) ?? [];
  return raw.map((item) => {
    const separator = item.indexOf('=');
    if (separator <= 0) throw new UsageError(`--${name} must be key=value, got "${item}"`);
    return { name: item.slice(0, separator), value: item.slice(separator + 1) };
  });
}

/** One of a fixed set of words, or a usage error listing them. */
export function choiceFlag<Choice extends string>(
  values: ParsedCommand['values'],
  name: string,
  choices: readonly Choice[],
): Choice | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  if (!choices.includes(raw as Choice)) {
    throw new UsageError(`--${name} must be one of ${choices.join('|')}, got "${String(raw)}"`);
  }
  return raw as Choice;
}

/** The SDK's entry point for the gateway; its own logs are off so stdout stays the output. */
export function connectSpool(global: GlobalOptions): Spool {
  return new Spool({ brokers: [global.gateway], clientId: 'spool-cli', logLevel: 'silent' });
}

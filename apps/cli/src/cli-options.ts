import { readClientProperties, Spool, type SpoolConfig } from '@spool/client';
import { UsageError } from './cli-errors';
import { checkGatewayReachable } from './gateway-reachability';
import { helpFlags, parseFlags, type FlagDeclarations, type ParsedFlags } from './command-help';

/**
 * Flags every gateway command takes, and the one way commands parse their flags: the command's
 * declaration (command-help.ts) with the global flags added, strict, its mistakes usage errors
 * (exit 2) that name the flag.
 */
export const gatewayEnvironmentVariable = 'SPOOL_GATEWAY';
export const clientConfigEnvironmentVariable = 'SPOOL_CLIENT_CONFIG';
export const gatewayDefault = 'localhost:9090';

export interface GlobalOptions {
  /** gateway: the gateway's `host:port`, from --gateway, $SPOOL_GATEWAY or the default. */
  readonly gateway: string;
  /** json: machine-readable output. */
  readonly json: boolean;
  /** verbose: stack traces with errors. */
  readonly verbose: boolean;
  /** ssl: TLS to the gateway, from the --config file's security.protocol and ssl.* keys. */
  readonly ssl?: SpoolConfig['ssl'];
  /** sasl: the user and password of the --config file's sasl.* keys (SASL_SSL). */
  readonly sasl?: SpoolConfig['sasl'];
}

/** The flags of every gateway command, printed in each one's help under "global flags". */
export const globalFlags: FlagDeclarations = {
  gateway: {
    type: 'string',
    valueName: 'HOST:PORT',
    defaultText: `$${gatewayEnvironmentVariable}, else ${gatewayDefault}`,
    description: 'the gateway to talk to',
  },
  // Kafka's tools' name for the client settings file (kafka-topics.sh --command-config);
  // `--config` is topic create's, as in kafka-topics.sh.
  'command-config': {
    type: 'string',
    valueName: 'FILE',
    defaultText: `$${clientConfigEnvironmentVariable}, else none`,
    description:
      'client.properties: spool.gateway, security.protocol, ssl.ca.location, ' +
      'ssl.certificate.location, ssl.key.location, sasl.mechanism, sasl.username, ' +
      'sasl.password (spool dev --secure writes one)',
  },
  json: { type: 'boolean', description: 'machine-readable output (JSON)' },
  verbose: { type: 'boolean', description: 'print the stack trace with an error' },
  ...helpFlags,
};

export interface ParsedCommand extends ParsedFlags {
  readonly global: GlobalOptions;
}

/** The global flags anywhere on the line, and the command's own; positionals as given. */
export function parseCommandArgs(
  argv: readonly string[],
  flags: FlagDeclarations,
  environment: NodeJS.ProcessEnv,
): ParsedCommand {
  const parsed = parseFlags(argv, { ...globalFlags, ...flags });
  const values = parsed.values;
  const configFile =
    (values['command-config'] as string | undefined) ??
    environment[clientConfigEnvironmentVariable];
  const fileConfig = configFile === undefined ? {} : readClientProperties(configFile);
  const fileGateway = fileConfig.brokers?.[0];
  const gateway =
    (values.gateway as string | undefined) ??
    environment[gatewayEnvironmentVariable] ??
    fileGateway ??
    gatewayDefault;
  checkGatewayAddress(
    gateway,
    values.gateway !== undefined
      ? '--gateway'
      : environment[gatewayEnvironmentVariable] !== undefined || fileGateway === undefined
        ? `$${gatewayEnvironmentVariable}`
        : `spool.gateway in ${configFile}`,
  );
  return {
    ...parsed,
    global: {
      gateway,
      json: values.json === true,
      verbose: values.verbose === true,
      ...(fileConfig.ssl === undefined ? {} : { ssl: fileConfig.ssl }),
      ...(fileConfig.sasl === undefined ? {} : { sasl: fileConfig.sasl }),
    },
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
  return new Spool({
    brokers: [global.gateway],
    clientId: 'spool-cli',
    logLevel: 'silent',
    ...(global.ssl === undefined ? {} : { ssl: global.ssl }),
    ...(global.sasl === undefined ? {} : { sasl: global.sasl }),
  });
}

/**
 * connectSpool for a command whose first SDK call would wait out long retries (a send waits up
 * to maxBlockMs, a minute, for metadata): a gateway that does not accept a connection fails the
 * command at once with exit code 3 instead. Called once the line is parsed, so a usage error is
 * still reported as one (exit 2) without any connection.
 */
export async function connectReachableSpool(global: GlobalOptions): Promise<Spool> {
  await checkGatewayReachable(global.gateway);
  return connectSpool(global);
}

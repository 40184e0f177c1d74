import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { SpoolError, CommonErrorCode } from './errors';

/**
 * Configuration, declared once per service as a table of settings, resolved with the precedence
 * flags > environment (`SPOOL_*`) > file > defaults, and validated once at start-up. A setting
 * declared as `brokerSessionTimeoutMs` is the flag `--broker-session-timeout-ms`, the variable
 * `SPOOL_BROKER_SESSION_TIMEOUT_MS` and the file key `broker.session.timeout.ms`, the way a Kafka
 * operator writes it in a properties file. The file is `--config FILE` (or `SPOOL_CONFIG`): a
 * `.json` object or a Java-style `.properties` file.
 */
export interface IntegerSetting {
  readonly type: 'integer';
  readonly default: number;
  readonly min: number;
  readonly max: number;
  readonly description: string;
}

export interface StringSetting {
  readonly type: 'string';
  readonly default: string;
  /** When set, the value must be one of these. */
  readonly choices?: readonly string[];
  /** When set, the value must match. */
  readonly pattern?: RegExp;
  readonly description: string;
}

export interface BooleanSetting {
  readonly type: 'boolean';
  readonly default: boolean;
  readonly description: string;
}

/** A comma-separated list of strings, such as controller addresses. */
export interface ListSetting {
  readonly type: 'list';
  readonly default: readonly string[];
  readonly description: string;
}

export type Setting = IntegerSetting | StringSetting | BooleanSetting | ListSetting;
export type SettingsSchema = Readonly<Record<string, Setting>>;

export type ConfigValues<S extends SettingsSchema> = {
  readonly [K in keyof S]: S[K] extends IntegerSetting
    ? number
    : S[K] extends BooleanSetting
      ? boolean
      : S[K] extends ListSetting
        ? readonly string[]
        : string;
};

type Source = 'flag' | 'environment' | 'file' | 'default';

export class ConfigError extends SpoolError {
  constructor(message: string) {
    super(CommonErrorCode.InvalidConfig, message);
    this.name = 'ConfigError';
  }
}

export interface ConfigInputs {
  readonly argv?: readonly string[];
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export function flagName(settingName: string): string {
  return settingName.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
}

export function environmentName(settingName: string): string {
  return `SPOOL_${flagName(settingName).replace(/-/g, '_').toUpperCase()}`;
}

export function fileKey(settingName: string): string {
  return flagName(settingName).replace(/-/g, '.');
}

/** Resolves and validates every setting; throws ConfigError naming the first bad one. */
export function loadConfig<S extends SettingsSchema>(
  schema: S,
  inputs: ConfigInputs = {},
): ConfigValues<S> {
  const argv = inputs.argv ?? process.argv.slice(2);
  const env = inputs.env ?? process.env;
  const flags = parseFlags(schema, argv);
  const configFile = flags.get('config') ?? env['SPOOL_CONFIG'];
  const fileValues =
    configFile === undefined ? new Map<string, string>() : readConfigFile(configFile);
  for (const key of fileValues.keys()) {
    if (!Object.keys(schema).some((name) => fileKey(name) === key)) {
      throw new ConfigError(`unknown setting ${key} in config file ${configFile}`);
    }
  }

  const values: Record<string, unknown> = {};
  for (const [name, setting] of Object.entries(schema)) {
    const fromFlag = flags.get(name);
    const fromEnvironment = env[environmentName(name)];
    const fromFile = fileValues.get(fileKey(name));
    const [raw, source]: [string | undefined, Source] =
      fromFlag !== undefined
        ? [fromFlag, 'flag']
        : fromEnvironment !== undefined
          ? [fromEnvironment, 'environment']
          : fromFile !== undefined
            ? [fromFile, 'file']
            : [undefined, 'default'];
    values[name] = raw === undefined ? setting.default : parseSetting(name, setting, raw, source);
  }
  return values as ConfigValues<S>;
}

function parseFlags(schema: SettingsSchema, argv: readonly string[]): Map<string, string> {
  const options: Record<string, { type: 'string' }> = { config: { type: 'string' } };
  for (const name of Object.keys(schema)) options[flagName(name)] = { type: 'string' };
  let parsed;
  try {
    parsed = parseArgs({
      args: joinFlagValues(argv, options),
      options,
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    throw new ConfigError(`bad command line: ${(error as Error).message}`);
  }
  const flags = new Map<string, string>();
  for (const [flag, value] of Object.entries(parsed.values)) {
    if (typeof value !== 'string') continue;
    const name =
      flag === 'config' ? 'config' : Object.keys(schema).find((n) => flagName(n) === flag);
    if (name !== undefined) flags.set(name, value);
  }
  return flags;
}

/**
 * Every setting takes a value, so the word after `--flag` is its value even when it starts with a
 * dash: `--local-retention-bytes -1` reads as `--local-retention-bytes=-1`. parseArgs would
 * otherwise refuse a value that looks like a flag as ambiguous.
 */
function joinFlagValues(argv: readonly string[], options: Record<string, unknown>): string[] {
  const joined: string[] = [];
  for (let index = 0; index < argv.length; index += 1) {
    const argument = argv[index]!;
    const next = argv[index + 1];
    const isKnownFlag = argument.startsWith('--') && !argument.includes('=');
    if (isKnownFlag && argument.slice(2) in options && next !== undefined && next !== '--') {
      joined.push(`${argument}=${next}`);
      index += 1;
    } else {
      joined.push(argument);
    }
  }
  return joined;
}

/** A `.json` object or a Java-style `.properties` file as key → value; ConfigError if bad. */
export function readConfigFile(file: string): Map<string, string> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read config file ${file}: ${(error as Error).message}`);
  }
  const values = new Map<string, string>();
  if (file.endsWith('.json')) {
    let object: unknown;
    try {
      object = JSON.parse(text);
    } catch (error) {
      throw new ConfigError(`config file ${file} is not valid JSON: ${(error as Error).message}`);
    }
    if (typeof object !== 'object' || object === null || Array.isArray(object)) {
      throw new ConfigError(`config file ${file} must hold a JSON object of settings`);
    }
    for (const [key, value] of Object.entries(object)) {
      values.set(key, Array.isArray(value) ? value.join(',') : String(value));
    }
    return values;
  }
  for (const [index, line] of text.split(/\r?\n/).entries()) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith('!')) continue;
    const separator = trimmed.search(/[=:]/);
    if (separator <= 0)
      throw new ConfigError(`config file ${file} line ${index + 1}: expected key=value`);
    values.set(trimmed.slice(0, separator).trim(), trimmed.slice(separator + 1).trim());
  }
  return values;
}

function parseSetting(name: string, setting: Setting, raw: string, source: Source): unknown {
  const where =
    source === 'flag'
      ? `--${flagName(name)}`
      : source === 'environment'
        ? environmentName(name)
        : fileKey(name);
  const bad = (allowed: string): never => {
    throw new ConfigError(
      `invalid value for setting ${fileKey(name)} (${where} from ${source}): ${JSON.stringify(raw)}; ${allowed}`,
    );
  };
  switch (setting.type) {
    case 'integer': {
      const allowed = `expected an integer from ${setting.min} to ${setting.max}`;
      if (!/^-?\d+$/.test(raw.trim())) return bad(allowed);
      const value = Number(raw.trim());
      if (!Number.isSafeInteger(value) || value < setting.min || value > setting.max)
        return bad(allowed);
      return value;
    }
    case 'boolean': {
      const normalized = raw.trim().toLowerCase();
      if (normalized === 'true' || normalized === '1') return true;
      if (normalized === 'false' || normalized === '0') return false;
      return bad('expected true or false');
    }
    case 'list':
      return raw
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== '');
    case 'string': {
      if (setting.choices !== undefined && !setting.choices.includes(raw)) {
        return bad(`expected one of ${setting.choices.join(', ')}`);
      }
      if (setting.pattern !== undefined && !setting.pattern.test(raw)) {
        return bad(`expected a value matching ${String(setting.pattern)}`);
      }
      return raw;
    }
  }
}

/** One line per setting, for `--help` and the README. */
export function describeSettings(schema: SettingsSchema): string {
  return Object.entries(schema)
    .map(([name, setting]) => {
      const fallback = Array.isArray(setting.default)
        ? setting.default.join(',')
        : String(setting.default);
      return `  --${flagName(name)} (${environmentName(name)}, ${fileKey(name)}; default ${fallback || '""'})\n      ${setting.description}`;
    })
    .join('\n');
}

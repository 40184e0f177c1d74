// Proves the configuration contract: flags beat environment beat file beat defaults, every bad
// value is refused with a message naming the setting, the source and what is allowed.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  environmentName,
  fileKey,
  flagName,
  loadConfig,
  type SettingsSchema,
} from './config';

const schema = {
  brokerSessionTimeoutMs: {
    type: 'integer',
    default: 9000,
    min: 1000,
    max: 60000,
    description: 'x',
  },
  logLevel: { type: 'string', default: 'info', choices: ['info', 'debug'], description: 'x' },
  unclean: { type: 'boolean', default: false, description: 'x' },
  controllers: { type: 'list', default: ['a:1'], description: 'x' },
} as const satisfies SettingsSchema;

function configFile(name: string, text: string): string {
  const directory = mkdtempSync(path.join(tmpdir(), 'spool-config-'));
  const file = path.join(directory, name);
  writeFileSync(file, text);
  return file;
}

describe('loadConfig', () => {
  it('names a setting the Kafka way in every source', () => {
    expect(flagName('brokerSessionTimeoutMs')).toBe('broker-session-timeout-ms');
    expect(environmentName('brokerSessionTimeoutMs')).toBe('SPOOL_BROKER_SESSION_TIMEOUT_MS');
    expect(fileKey('brokerSessionTimeoutMs')).toBe('broker.session.timeout.ms');
  });

  it('uses defaults when nothing is set', () => {
    expect(loadConfig(schema, { argv: [], env: {} })).toEqual({
      brokerSessionTimeoutMs: 9000,
      logLevel: 'info',
      unclean: false,
      controllers: ['a:1'],
    });
  });

  it('reads a negative number after a flag as its value, not as a flag', () => {
    const signed = {
      retentionBytes: { type: 'integer', default: 0, min: -1, max: 10, description: 'x' },
    } as const satisfies SettingsSchema;
    expect(loadConfig(signed, { argv: ['--retention-bytes', '-1'], env: {} })).toEqual({
      retentionBytes: -1,
    });
    expect(() => loadConfig(signed, { argv: ['--retention-bytes', '-2'], env: {} })).toThrow(
      /retention-bytes/,
    );
    expect(() => loadConfig(signed, { argv: ['-1'], env: {} })).toThrow(ConfigError);
  });

  it('takes flags over environment over file', () => {
    const file = configFile(
      'server.properties',
      '# comment\nbroker.session.timeout.ms=2000\nlog.level = debug\n',
    );
    const env = {
      SPOOL_CONFIG: file,
      SPOOL_BROKER_SESSION_TIMEOUT_MS: '3000',
      SPOOL_UNCLEAN: 'true',
    };
    const fromEnvironment = loadConfig(schema, { argv: [], env });
    expect(fromEnvironment.brokerSessionTimeoutMs).toBe(3000);
    expect(fromEnvironment.logLevel).toBe('debug');
    expect(fromEnvironment.unclean).toBe(true);
    const fromFlag = loadConfig(schema, { argv: ['--broker-session-timeout-ms', '4000'], env });
    expect(fromFlag.brokerSessionTimeoutMs).toBe(4000);
  });

  it('reads JSON files and lists', () => {
    const file = configFile(
      'spool.json',
      JSON.stringify({ controllers: ['x:1', 'y:2'], unclean: true }),
    );
    const config = loadConfig(schema, { argv: ['--config', file], env: {} });
    expect(config.controllers).toEqual(['x:1', 'y:2']);
    expect(config.unclean).toBe(true);
    expect(
      loadConfig(schema, { argv: ['--controllers', 'p:1, q:2'], env: {} }).controllers,
    ).toEqual(['p:1', 'q:2']);
  });

  it.each([
    [
      ['--broker-session-timeout-ms', 'abc'],
      /broker\.session\.timeout\.ms.*--broker-session-timeout-ms.*"abc".*integer from 1000 to 60000/,
    ],
    [['--broker-session-timeout-ms', '999'], /broker\.session\.timeout\.ms.*"999"/],
    [['--broker-session-timeout-ms', '1.5'], /"1\.5"/],
    [['--log-level', 'loud'], /log\.level.*"loud".*one of info, debug/],
    [['--unclean', 'maybe'], /unclean.*true or false/],
    [['--no-such-setting', '1'], /no-such-setting/],
  ])('refuses %j with a message naming the setting', (argv, message) => {
    expect(() => loadConfig(schema, { argv, env: {} })).toThrow(ConfigError);
    expect(() => loadConfig(schema, { argv, env: {} })).toThrow(message);
  });

  it('names the environment variable when the bad value came from there', () => {
    expect(() =>
      loadConfig(schema, { argv: [], env: { SPOOL_BROKER_SESSION_TIMEOUT_MS: '-5' } }),
    ).toThrow(/SPOOL_BROKER_SESSION_TIMEOUT_MS from environment/);
  });

  it('refuses unknown keys and unreadable files', () => {
    const file = configFile('bad.properties', 'segment.bytez=1\n');
    expect(() => loadConfig(schema, { argv: ['--config', file], env: {} })).toThrow(
      /unknown setting segment\.bytez/,
    );
    expect(() =>
      loadConfig(schema, { argv: ['--config', '/nonexistent/x.json'], env: {} }),
    ).toThrow(/cannot read config file/);
    const broken = configFile('broken.json', '{');
    expect(() => loadConfig(schema, { argv: ['--config', broken], env: {} })).toThrow(
      /not valid JSON/,
    );
  });
});

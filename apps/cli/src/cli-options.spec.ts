// Proves how flags are read: global flags anywhere on the line, the gateway from --gateway, then
// $SPOOL_GATEWAY, then localhost:9090; produce's and consume's flags become SDK settings, and a
// line becomes a record with the key before the first separator.
import { describe, expect, it } from 'vitest';
import { UsageError } from './cli-errors';
import { keyValueFlags, parseCommandArgs } from './cli-options';
import { parseConsumeArgs } from './consume-command';
import { lineToMessage, parseProduceArgs } from './produce-command';

describe('parseCommandArgs', () => {
  it('reads the gateway from the flag, the environment, then the default', () => {
    const environment = { SPOOL_GATEWAY: 'gateway.local:7000' };
    expect(parseCommandArgs(['--gateway', 'h:1'], {}, environment).global.gateway).toBe('h:1');
    expect(parseCommandArgs([], {}, environment).global.gateway).toBe('gateway.local:7000');
    expect(parseCommandArgs([], {}, {}).global).toEqual({
      gateway: 'localhost:9090',
      json: false,
      verbose: false,
    });
  });

  it('names a bad $SPOOL_GATEWAY as the source', () => {
    expect(() => parseCommandArgs([], {}, { SPOOL_GATEWAY: 'h:0' })).toThrow(
      new UsageError('$SPOOL_GATEWAY must be host:port, got "h:0"'),
    );
  });

  it('takes global flags between positionals and command flags', () => {
    const parsed = parseCommandArgs(
      ['t', '--json', '--partitions', '3', '--verbose'],
      {
        partitions: { type: 'string', description: 'the partition count' },
      },
      {},
    );
    expect(parsed.positionals).toEqual(['t']);
    expect(parsed.values.partitions).toBe('3');
    expect(parsed.global.json).toBe(true);
    expect(parsed.global.verbose).toBe(true);
  });

  it('splits repeated key=value flags at the first =', () => {
    const parsed = parseCommandArgs(
      ['--config', 'a=1', '--config', 'b=x=y'],
      {
        config: { type: 'string', multiple: true, description: 'a topic config' },
      },
      {},
    );
    expect(keyValueFlags(parsed.values, 'config')).toEqual([
      { name: 'a', value: '1' },
      { name: 'b', value: 'x=y' },
    ]);
  });
});

describe('spool produce flags', () => {
  it('maps --acks and --compression to the SDK settings', () => {
    expect(parseProduceArgs(['t'], {}).settings).toEqual({
      topic: 't',
      file: undefined,
      keySeparator: undefined,
      acks: 'all',
      compression: 'none',
    });
    const { settings } = parseProduceArgs(
      ['t', '--acks', '1', '--compression', 'zstd', '--key-separator', ':', '--file', 'f'],
      {},
    );
    expect(settings).toMatchObject({ acks: 1, compression: 'zstd', keySeparator: ':', file: 'f' });
    expect(parseProduceArgs(['t', '--acks', '0'], {}).settings.acks).toBe(0);
  });

  it('keys a line by what precedes the first separator', () => {
    expect(lineToMessage('k:v:w', ':')).toEqual({ key: 'k', value: 'v:w' });
    expect(lineToMessage('no-separator', ':')).toEqual({ key: null, value: 'no-separator' });
    expect(lineToMessage('k::v', '::')).toEqual({ key: 'k', value: 'v' });
    expect(lineToMessage('k:v', undefined)).toEqual({ value: 'k:v' });
  });
});

describe('spool consume flags', () => {
  it('reads a partition, an offset as a bigint and a message limit', () => {
    const { settings } = parseConsumeArgs(
      ['t', '--partition', '2', '--offset', '9007199254740993', '--max-messages', '5'],
      {},
    );
    expect(settings).toMatchObject({
      topic: 't',
      partition: 2,
      offset: 9007199254740993n,
      maxMessages: 5,
      format: 'text',
      fromBeginning: false,
    });
  });

  it('refuses --group with --partition', () => {
    expect(() => parseConsumeArgs(['t', '--group', 'g', '--partition', '0'], {})).toThrow(
      UsageError,
    );
  });
});

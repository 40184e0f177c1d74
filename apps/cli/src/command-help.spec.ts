// Proves the one declaration behind parsing and help: defaults reach the parsed values and the
// help alike, negative numbers are values (`--throughput -1`), parse mistakes are usage errors
// naming the flag, and the help lists every declared flag with its default and the examples.
import { describe, expect, it } from 'vitest';
import { UsageError } from './cli-errors';
import {
  formatCommandHelp,
  joinNegativeValues,
  parseFlags,
  wantsHelp,
  type CommandHelp,
} from './command-help';

const help: CommandHelp = {
  path: ['bench', 'produce'],
  usage: 'spool bench produce --topic T [--throughput R]',
  summary: 'Produce records as fast as asked.',
  flags: {
    topic: { type: 'string', valueName: 'T', description: 'the topic' },
    throughput: {
      type: 'string',
      valueName: 'R',
      default: '-1',
      description: 'records per second, -1 for unlimited',
    },
    config: { type: 'string', multiple: true, valueName: 'key=value', description: 'a config' },
    keys: { type: 'boolean', description: 'key each record' },
  },
  examples: ['spool bench produce --topic T --throughput 1000'],
};

describe('parseFlags', () => {
  it('fills in declared defaults and tells them from the flags given', () => {
    expect(parseFlags([], help.flags).values.throughput).toBe('-1');
    expect(parseFlags([], help.flags).given).toEqual(new Set());
    expect(parseFlags(['--keys', '--throughput', '5'], help.flags).given).toEqual(
      new Set(['keys', 'throughput']),
    );
  });

  it('takes a negative number as the value of a flag that takes one', () => {
    expect(parseFlags(['--throughput', '-1'], help.flags).values.throughput).toBe('-1');
    expect(parseFlags(['--throughput', '-2.5'], help.flags).values.throughput).toBe('-2.5');
    expect(parseFlags(['--throughput=-7'], help.flags).values.throughput).toBe('-7');
  });

  it('joins no negative number to a boolean flag, nor after --', () => {
    expect(joinNegativeValues(['--keys', '-1'], (flag) => flag === 'topic')).toEqual([
      '--keys',
      '-1',
    ]);
    expect(joinNegativeValues(['--', '--topic', '-1'], () => true)).toEqual([
      '--',
      '--topic',
      '-1',
    ]);
  });

  it('turns parse errors into usage errors naming the flag', () => {
    expect(() => parseFlags(['--bogus'], help.flags)).toThrow(
      new UsageError('unknown flag --bogus'),
    );
    expect(() => parseFlags(['--topic'], help.flags)).toThrow(
      new UsageError('flag --topic needs a value'),
    );
    expect(() => parseFlags(['--topic', '-x'], help.flags)).toThrow(
      new UsageError('flag --topic has a value starting with "-": write --topic=VALUE'),
    );
  });
});

describe('wantsHelp', () => {
  it('sees -h and --help anywhere before --', () => {
    expect(wantsHelp(['create', 't', '--help'])).toBe(true);
    expect(wantsHelp(['-h'])).toBe(true);
    expect(wantsHelp(['t', '--', '--help'])).toBe(false);
    expect(wantsHelp(['t'])).toBe(false);
  });
});

describe('formatCommandHelp', () => {
  it('prints usage, every flag with its default, shared flags and the example', () => {
    const text = formatCommandHelp(help, [
      {
        title: 'global flags',
        flags: { json: { type: 'boolean', description: 'machine-readable output' } },
      },
    ]);
    expect(text).toBe(
      'usage: spool bench produce --topic T [--throughput R]\n' +
        '\n' +
        'Produce records as fast as asked.\n' +
        '\n' +
        'flags:\n' +
        '  --topic T              the topic\n' +
        '  --throughput R         records per second, -1 for unlimited (default -1)\n' +
        '  --config key=value...  a config (default none)\n' +
        '  --keys                 key each record\n' +
        '\n' +
        'global flags:\n' +
        '  --json  machine-readable output\n' +
        '\n' +
        'example:\n' +
        '  spool bench produce --topic T --throughput 1000\n',
    );
  });
});

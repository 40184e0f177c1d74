// `spool broker config`'s command line, checked whole before anything is sent: the action, a
// broker id or --default, key=value pairs for set and names for delete, each name once.
import { describe, expect, it } from 'vitest';
import { UsageError } from './cli-errors';
import { parseCommandArgs } from './cli-options';
import {
  brokerConfigHelp,
  formatBrokerConfigs,
  parseBrokerConfigCommand,
} from './broker-config-command';

const parse = (argv: readonly string[]) =>
  parseBrokerConfigCommand(parseCommandArgs(argv, brokerConfigHelp.flags, {}));

describe('spool broker config', () => {
  it('reads describe of a broker and of the cluster-wide default', () => {
    expect(parse(['describe', '1'])).toEqual({
      action: 'describe',
      brokerId: 1,
      set: [],
      delete: [],
    });
    expect(parse(['describe']).brokerId).toBeUndefined();
    expect(parse(['describe', '--default']).brokerId).toBeUndefined();
  });

  it('reads set pairs, comma-separated or as separate words, and delete names', () => {
    expect(
      parse([
        'set',
        '2',
        'leader.replication.throttled.rate=100,follower.replication.throttled.rate=0',
      ]),
    ).toEqual({
      action: 'set',
      brokerId: 2,
      set: [
        { name: 'leader.replication.throttled.rate', value: '100' },
        { name: 'follower.replication.throttled.rate', value: '0' },
      ],
      delete: [],
    });
    expect(parse(['set', '--default', 'a=1', 'b=2'])).toEqual({
      action: 'set',
      brokerId: undefined,
      set: [
        { name: 'a', value: '1' },
        { name: 'b', value: '2' },
      ],
      delete: [],
    });
    expect(parse(['delete', '1', 'a,b'])).toEqual({
      action: 'delete',
      brokerId: 1,
      set: [],
      delete: ['a', 'b'],
    });
  });

  it.each([
    [[], /needs an action/],
    [['list'], /unknown broker config action "list"/],
    [['set'], /missing N \(a broker id\) or --default/],
    [['set', '1'], /set needs key=value pairs/],
    [['set', 'x', 'a=1'], /N must be a broker id .*got "x"/],
    [['set', '-1', 'a=1'], /unknown flag -1/],
    [['set', '99999999999', 'a=1'], /N must be a broker id/],
    [['set', '1', 'a'], /expected key=value, got "a"/],
    [['set', '1', '=5'], /expected key=value, got "=5"/],
    [['set', '1', 'a=1,a=2'], /config "a" is named twice/],
    [['set', '--default', '1', 'a=1'], /either a broker id or --default, not both/],
    [['delete', '1'], /delete needs config names/],
    [['delete', '1', 'a=1'], /delete takes config names, not key=value: "a=1"/],
    [['describe', '1', '2'], /unexpected argument "2"/],
  ])('refuses %j naming what is wrong', (argv, message) => {
    expect(() => parse(argv)).toThrow(UsageError);
    expect(() => parse(argv)).toThrow(message);
  });

  it('prints NAME VALUE SOURCE, or says that nothing is set', () => {
    expect(
      formatBrokerConfigs({
        brokerId: 1,
        configs: [
          {
            name: 'follower.replication.throttled.rate',
            value: '5',
            source: 'DYNAMIC_DEFAULT_BROKER_CONFIG',
          },
          {
            name: 'leader.replication.throttled.rate',
            value: '10',
            source: 'DYNAMIC_BROKER_CONFIG',
          },
        ],
      }),
    ).toBe(
      'NAME                                 VALUE  SOURCE\n' +
        'follower.replication.throttled.rate  5      DYNAMIC_DEFAULT_BROKER_CONFIG\n' +
        'leader.replication.throttled.rate    10     DYNAMIC_BROKER_CONFIG\n',
    );
    expect(formatBrokerConfigs({ brokerId: 3, configs: [] })).toMatch(
      /^broker 3 has no dynamic configs/,
    );
  });
});

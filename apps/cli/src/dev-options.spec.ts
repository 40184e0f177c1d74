// Proves `spool dev`'s command line: defaults, each flag's bounds with a usage error naming the
// flag and the value, the restart policies, and a help that names every flag with its default.
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatCommandHelp } from './command-help';
import { devHelp, parseDevOptions } from './dev-options';

describe('spool dev options', () => {
  it('defaults to 3 nodes, 1 coordinator, ports 9090 and 9092, .spool and restarts', () => {
    expect(parseDevOptions([])).toEqual({
      dataDirectory: path.resolve('.spool'),
      gatewayPort: 9090,
      kafkaPort: 9092,
      storageNodeCount: 3,
      coordinatorCount: 1,
      restartPolicy: 'always',
      profileDirectory: undefined,
      secure: false,
    });
  });

  it('takes each flag', () => {
    const options = parseDevOptions([
      ...['--nodes', '5', '--coordinators', '2', '--gateway-port', '0', '--kafka-port', '19092'],
      ...['--data-dir', '/tmp/d', '--restart', 'never', '--profile-dir', '/tmp/p', '--secure'],
    ]);
    expect(options).toEqual({
      dataDirectory: '/tmp/d',
      gatewayPort: 0,
      kafkaPort: 19092,
      storageNodeCount: 5,
      coordinatorCount: 2,
      restartPolicy: 'never',
      profileDirectory: '/tmp/p',
      secure: true,
    });
  });

  it.each([
    [['--nodes', '0'], '--nodes must be an integer from 1 to 16, got "0"'],
    [['--nodes', '2.5'], '--nodes must be an integer from 1 to 16, got "2.5"'],
    [['--coordinators', '9'], '--coordinators must be an integer from 1 to 8, got "9"'],
    [['--gateway-port', '-1'], '--gateway-port must be an integer from 0 to 65535, got "-1"'],
    [['--kafka-port', '65536'], '--kafka-port must be an integer from 0 to 65535, got "65536"'],
    [['--restart', 'sometimes'], '--restart must be one of always|on-failure|never'],
    [['--data-dir='], '--data-dir must name a folder'],
    [['--bogus'], 'unknown flag --bogus'],
    [['extra'], 'spool dev takes no arguments, got "extra"'],
  ])('refuses %j', (argv, message) => {
    expect(() => parseDevOptions(argv)).toThrow(message);
  });

  it('names every flag with its default in the help', () => {
    const help = formatCommandHelp(devHelp);
    for (const flag of ['data-dir', 'gateway-port', 'kafka-port', 'nodes', 'coordinators']) {
      expect(help).toContain(`--${flag}`);
    }
    expect(help).toContain('--profile-dir');
    expect(help).toContain('--secure');
    expect(help).toMatch(/--restart POLICY .*\(default always\)/);
    expect(help).toMatch(/--gateway-port PORT .*\(default 9090\)/);
    expect(help).toMatch(/--kafka-port PORT [^]*\(default 9092\)/);
    expect(help).toContain('examples:\n  spool dev ');
    expect(help).toContain('spool dev --secure ');
  });
});

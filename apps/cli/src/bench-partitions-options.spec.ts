// Proves `spool bench partitions`'s command line and plan: the defaults (creates of 1,000 and
// 10,000 on the way to 2,000 and 20,000 partitions, in topics of at most 10,000), each flag's
// bounds as a usage error naming the flag and the value, creates that fit under no size refused,
// and a help that names every flag.
import { describe, expect, it } from 'vitest';
import { parseBenchPartitionsArgs, benchPartitionsHelp } from './bench-partitions-options';
import { planPartitionsSteps } from './bench-partitions-plan';
import { formatCommandHelp } from './command-help';

const parse = (argv: string[]) => parseBenchPartitionsArgs(argv, {});

describe('bench partitions options', () => {
  it('defaults to RF3 on 3 nodes, creates of 1,000 and 10,000, idle at 2,000 and 20,000', () => {
    const settings = parse([]);
    expect(settings).toMatchObject({
      createSizes: [1_000, 10_000],
      partitionSizes: [2_000, 20_000],
      storageNodeCount: 3,
      replicationFactor: 3,
      topicPartitionsMax: 10_000,
      idleSeconds: 10,
      settleSeconds: 5,
      stepTimeoutMs: 600_000,
      json: false,
    });
    expect(settings.steps.map((step) => [step.kind, step.partitions])).toEqual([
      ['create', 1_000],
      ['create', 1_000],
      ['idle', 2_000],
      ['create', 10_000],
      ['create', 8_000],
      ['idle', 20_000],
    ]);
  });

  it('takes each flag, sorts the sizes and reads --json', () => {
    const settings = parse([
      ...['--create', '30,10', '--partitions', '60', '--nodes', '4'],
      ...['--replication-factor', '2', '--topic-partitions', '25', '--idle-seconds', '1'],
      ...['--settle-seconds', '0', '--timeout-seconds', '30', '--json'],
    ]);
    expect(settings).toMatchObject({
      createSizes: [10, 30],
      partitionSizes: [60],
      storageNodeCount: 4,
      replicationFactor: 2,
      topicPartitionsMax: 25,
      idleSeconds: 1,
      settleSeconds: 0,
      stepTimeoutMs: 30_000,
      json: true,
    });
  });

  it.each([
    [['--create', '10,x'], /--create must be partition counts .* got "10,x"/],
    [['--partitions', '0'], /--partitions must be partition counts .* got "0"/],
    [['--partitions', ''], /--partitions must be partition counts/],
    [['--nodes', '1'], /--nodes must be an integer from 2 to 16, got "1"/],
    [['--replication-factor', '4'], /--replication-factor must be an integer from 2 to 3, got "4"/],
    [['--topic-partitions', '10001'], /--topic-partitions must be an integer from 1 to 10000/],
    [['--idle-seconds', '0'], /--idle-seconds must be an integer from 1/],
    [['--gateway', 'localhost:9090'], /starts a cluster of its own; --gateway does not apply/],
    [['--bogus'], /unknown flag --bogus/],
    [['extra'], /unexpected argument "extra"/],
    [
      ['--create', '1500', '--partitions', '1000,2000'],
      /--create 1500 does not fit under the --partitions sizes 1000,2000/,
    ],
    [['--create', '30', '--partitions', '20'], /--create 30 does not fit/],
  ])('refuses %j', (argv, message) => {
    expect(() => parse(argv)).toThrow(message);
  });

  it('has a help that names every flag', () => {
    const help = formatCommandHelp(benchPartitionsHelp);
    for (const flag of Object.keys(benchPartitionsHelp.flags)) expect(help).toContain(`--${flag}`);
  });
});

describe('bench partitions plan', () => {
  it('splits a create into topics of at most topicPartitionsMax, named per step', () => {
    const { steps, unplaced } = planPartitionsSteps([25], [25, 40], 10);
    expect(unplaced).toEqual([]);
    expect(steps).toEqual([
      {
        kind: 'create',
        timed: true,
        partitions: 25,
        existingPartitions: 0,
        topics: [
          { name: 'bench-partitions-0-0', partitions: 10 },
          { name: 'bench-partitions-0-1', partitions: 10 },
          { name: 'bench-partitions-0-2', partitions: 5 },
        ],
      },
      { kind: 'idle', partitions: 25 },
      {
        kind: 'create',
        timed: false,
        partitions: 15,
        existingPartitions: 25,
        topics: [
          { name: 'bench-partitions-2-0', partitions: 10 },
          { name: 'bench-partitions-2-1', partitions: 5 },
        ],
      },
      { kind: 'idle', partitions: 40 },
    ]);
  });

  it('puts a create that does not fit under one size under the next, and reports one that fits none', () => {
    expect(planPartitionsSteps([150], [100, 300], 1_000).steps.map((step) => step.kind)).toEqual([
      'create',
      'idle',
      'create',
      'create',
      'idle',
    ]);
    expect(planPartitionsSteps([150, 150], [100, 200], 1_000).unplaced).toEqual([150, 150]);
  });
});

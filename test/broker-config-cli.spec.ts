// Proves `spool broker config` end to end, against `spool dev` with storage nodes 0 and 1 (heartbeats
// every 200 ms, so a change reaches a node quickly): the CLI sets a cluster-wide default and
// broker 1's own replication throttles; `describe` (table and --json) shows each with its source,
// broker 0 only the default; DescribeConfigs of BROKER "1" on the Kafka listener agrees; storage
// node 1 runs with them (its spool_replication_throttled_rate_bytes gauge). A bad value, an unknown
// name next to a good one, a static setting and an unknown broker are refused with an error
// naming them (exit 1) and change nothing; a command line without a broker is a usage error
// (exit 2). Deleting broker 1's values brings back the default, deleting the default the static
// settings (0: off).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliResult } from './support/cli-process';
import { KafkaTestConnection } from './support/kafka-test-connection';
import { scrape, sumOf } from './support/prometheus-scrape';
import { startSpoolDev, type SpoolDevProcess } from './support/spool-dev-process';

const leaderRate = 'leader.replication.throttled.rate';
const followerRate = 'follower.replication.throttled.rate';
const describeConfigsApiKey = 32;
/** Kafka's ConfigSource values. */
const Source = { DynamicBroker: 2, DynamicDefaultBroker: 3 } as const;
/** A heartbeat carries the change to the node: a few intervals on a loaded machine. */
const reachNodeTimeoutMs = 10_000;

let dev: SpoolDevProcess | undefined;

beforeAll(async () => {
  dev = await startSpoolDev(['--nodes', '2'], {
    env: { SPOOL_BROKER_HEARTBEAT_INTERVAL_MS: '200' },
  });
}, 60_000);

afterAll(async () => {
  await dev?.stop();
});

function spool(...argv: string[]): Promise<CliResult> {
  return runCli(['broker', 'config', ...argv, '--gateway', dev!.gatewayAddress]);
}

function explain(result: CliResult): string {
  return `exit ${result.exitCode}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;
}

/** `spool broker config describe [N] --json`, checked to succeed. */
async function described(...argv: string[]): Promise<unknown> {
  const result = await spool('describe', ...argv, '--json');
  expect(result.exitCode, explain(result)).toBe(0);
  return JSON.parse(result.stdout) as unknown;
}

/** Broker 1's throttles in effect, by side, from storage node 1's own metrics. */
async function throttlesOfBrokerOne(): Promise<Record<string, number | undefined>> {
  const node = dev!.processes.find((entry) => entry.role === 'storage-node' && entry.id === 1)!;
  const scraped = await scrape(node.ports.metrics);
  return {
    leader: sumOf([scraped], 'spool_replication_throttled_rate_bytes', { side: 'leader' }),
    follower: sumOf([scraped], 'spool_replication_throttled_rate_bytes', { side: 'follower' }),
  };
}

describe('spool broker config', () => {
  it('sets, describes and deletes throttles; refuses bad changes and changes nothing', async () => {
    const nothingSet = await spool('describe', '1');
    expect(nothingSet.exitCode, explain(nothingSet)).toBe(0);
    expect(nothingSet.stdout).toBe(
      'broker 1 has no dynamic configs: it runs on its static settings\n',
    );

    const setDefault = await spool('set', '--default', `${followerRate}=2000000`);
    expect(setDefault.exitCode, explain(setDefault)).toBe(0);
    expect(setDefault.stdout).toBe(`set ${followerRate}=2000000 on the cluster-wide default\n`);
    const setOwn = await spool('set', '1', `${leaderRate}=1000000,${followerRate}=3000000`);
    expect(setOwn.exitCode, explain(setOwn)).toBe(0);

    const table = await spool('describe', '1');
    expect(table.exitCode, explain(table)).toBe(0);
    expect(table.stdout).toBe(
      'NAME                                 VALUE    SOURCE\n' +
        `${followerRate}  3000000  DYNAMIC_BROKER_CONFIG\n` +
        `${leaderRate}    1000000  DYNAMIC_BROKER_CONFIG\n`,
    );
    const brokerOne = {
      broker: 1,
      configs: [
        { name: followerRate, value: '3000000', source: 'DYNAMIC_BROKER_CONFIG' },
        { name: leaderRate, value: '1000000', source: 'DYNAMIC_BROKER_CONFIG' },
      ],
    };
    expect(await described('1')).toEqual(brokerOne);
    expect(await described('0')).toEqual({
      broker: 0,
      configs: [{ name: followerRate, value: '2000000', source: 'DYNAMIC_DEFAULT_BROKER_CONFIG' }],
    });
    expect(await described()).toEqual({
      broker: null,
      configs: [{ name: followerRate, value: '2000000', source: 'DYNAMIC_DEFAULT_BROKER_CONFIG' }],
    });

    // The Kafka listener reads the same values for BROKER "1".
    const gateway = dev!.processes.find((entry) => entry.role === 'gateway')!;
    const connection = await KafkaTestConnection.open({
      port: (gateway.ports as { kafka?: number }).kafka!,
    });
    try {
      const answer = await connection.request<{
        results: Array<{
          errorCode: number;
          resourceName: string;
          configs: Array<{ name: string; value: string; configSource: number }>;
        }>;
      }>(describeConfigsApiKey, 4, {
        resources: [{ resourceType: 4, resourceName: '1', configurationKeys: null }],
      });
      expect(
        answer.results.map((result) => ({
          errorCode: result.errorCode,
          resourceName: result.resourceName,
          configs: result.configs.map(({ name, value, configSource }) => ({
            name,
            value,
            configSource,
          })),
        })),
      ).toEqual([
        {
          errorCode: 0,
          resourceName: '1',
          configs: [
            { name: followerRate, value: '3000000', configSource: Source.DynamicBroker },
            { name: leaderRate, value: '1000000', configSource: Source.DynamicBroker },
          ],
        },
      ]);
    } finally {
      connection.close();
    }

    // Storage node 1 runs with its own values.
    await expect
      .poll(throttlesOfBrokerOne, { timeout: reachNodeTimeoutMs, interval: 200 })
      .toEqual({ leader: 1_000_000, follower: 3_000_000 });

    // Refused, each naming what is wrong; nothing changes, the good half of a change included.
    const refusals: Array<[string[], number, RegExp]> = [
      [
        ['set', '1', `${leaderRate}=fast`],
        1,
        /^spool: INVALID_CONFIG: .*leader\.replication\.throttled\.rate="fast" must be a non-negative integer/,
      ],
      [
        ['set', '1', `${leaderRate}=5,no.such.config=1`],
        1,
        /^spool: INVALID_CONFIG: .*"no\.such\.config" is not a dynamic broker config/,
      ],
      [
        ['set', '1', 'log.dirs=/tmp/elsewhere'],
        1,
        /^spool: INVALID_REQUEST: .*Cannot update these configs dynamically: log\.dirs/,
      ],
      [
        ['set', '9', `${leaderRate}=5`],
        1,
        /^spool: BROKER_ID_NOT_REGISTERED: .*broker 9 is not registered/,
      ],
      [['describe', '9'], 1, /^spool: BROKER_ID_NOT_REGISTERED: .*broker 9 is not registered/],
      [
        ['delete', '1', 'no.such.config'],
        1,
        /^spool: INVALID_CONFIG: .*"no\.such\.config" is not a dynamic broker config/,
      ],
      [['set', `${leaderRate}=5`], 2, /^spool: USAGE: N must be a broker id/],
      [['delete', '1'], 2, /^spool: USAGE: delete needs config names/],
    ];
    for (const [argv, exitCode, message] of refusals) {
      const refused = await spool(...argv);
      expect({ argv, exitCode: refused.exitCode }, explain(refused)).toEqual({ argv, exitCode });
      expect(refused.stderr, explain(refused)).toMatch(message);
      expect(refused.stdout).toBe('');
    }
    expect(await described('1')).toEqual(brokerOne);

    // Deleting broker 1's own values brings back the default, then the static settings.
    const deleted = await spool('delete', '1', `${leaderRate},${followerRate}`);
    expect(deleted.exitCode, explain(deleted)).toBe(0);
    expect(deleted.stdout).toBe(`deleted ${leaderRate}, ${followerRate} from broker 1\n`);
    expect(await described('1')).toEqual({
      broker: 1,
      configs: [{ name: followerRate, value: '2000000', source: 'DYNAMIC_DEFAULT_BROKER_CONFIG' }],
    });
    await expect
      .poll(throttlesOfBrokerOne, { timeout: reachNodeTimeoutMs, interval: 200 })
      .toEqual({ leader: 0, follower: 2_000_000 });

    const deletedDefault = await spool('delete', '--default', followerRate);
    expect(deletedDefault.exitCode, explain(deletedDefault)).toBe(0);
    expect(await described('1')).toEqual({ broker: 1, configs: [] });
    await expect
      .poll(throttlesOfBrokerOne, { timeout: reachNodeTimeoutMs, interval: 200 })
      .toEqual({ leader: 0, follower: 0 });
  }, 90_000);
});

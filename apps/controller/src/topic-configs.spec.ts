// Proves the reassignment throttles' replica lists as topic configs: Kafka's
// ThrottledReplicaListValidator accepts "*", the empty list and partitionId:brokerId pairs (spaces
// and empty items dropped), refuses anything else with INVALID_CONFIG naming the config and the
// value, and DescribeConfigs shows the empty default until one is set.
import { describe, expect, it } from 'vitest';
import { describeTopicConfigs, validateTopicConfig, validateTopicConfigs } from './topic-configs';

const names = ['leader.replication.throttled.replicas', 'follower.replication.throttled.replicas'];

describe('*.replication.throttled.replicas', () => {
  it.each(names)('%s accepts "*", the empty list and partition:broker pairs', (name) => {
    expect(validateTopicConfig(name, '*')).toBe('*');
    expect(validateTopicConfig(name, ' * ')).toBe('*');
    expect(validateTopicConfig(name, '')).toBe('');
    expect(validateTopicConfig(name, '0:1')).toBe('0:1');
    expect(validateTopicConfig(name, '0:1, 1:2,,2:007 ')).toBe('0:1,1:2,2:7');
  });

  it.each(names)('%s refuses anything else, naming the config and the value', (name) => {
    for (const value of ['1', '0:', ':1', 'a:1', '0:1:2', '*,0:1', '-1:2', '0;1']) {
      let thrown: unknown;
      try {
        validateTopicConfig(name, value);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, value).toMatchObject({ code: 'INVALID_CONFIG' });
      expect((thrown as Error).message).toContain(
        `invalid value "${value}" for topic config ${name}`,
      );
      expect((thrown as Error).message).toContain('[partitionId]:[brokerId]');
    }
  });

  it('is described with its empty default until set', () => {
    const set = validateTopicConfigs([{ name: names[0]!, value: '0:1,1:1' }]);
    const described = describeTopicConfigs(set);
    expect(described).toContainEqual({ name: names[0], value: '0:1,1:1', isDefault: false });
    expect(described).toContainEqual({ name: names[1], value: '', isDefault: true });
  });
});

// Proves that Apache Kafka's own tools, which the Kafka listener's tests and the bench run against
// Spool, are installed by the project's files: ensure-kafka-tools.sh resolves kafka-tools and
// kafka_2.13 4.4.0 from Maven Central with every jar checked against its pinned SHA-256, and each
// tool's main class (test/support/kafka-tools.ts) starts on that classpath and reports Kafka 4.4.0.
import { describe, expect, it } from 'vitest';
import { kafkaToolsClasspath, runKafkaTool, type KafkaTool } from './support/kafka-tools';

describe("Apache Kafka's tools", () => {
  it('resolve to the pinned jars', () => {
    const jars = kafkaToolsClasspath().split(':');
    expect(jars.some((jar) => jar.endsWith('/kafka-tools-4.4.0.jar'))).toBe(true);
    expect(jars.some((jar) => jar.endsWith('/kafka_2.13-4.4.0.jar'))).toBe(true);
    expect(jars.some((jar) => jar.endsWith('/kafka-clients-4.4.0.jar'))).toBe(true);
  }, 600_000);

  it.each<KafkaTool>([
    'consoleProducer',
    'consoleConsumer',
    'topics',
    'consumerGroups',
    'consumerPerformance',
    'broker',
  ])('%s starts and reports version 4.4.0', async (tool) => {
    const run = await runKafkaTool(tool, ['--version']);
    expect(run.stdout.trim().split('\n').at(-1), run.stderr).toBe('4.4.0');
  });

  it('ProducerPerformance starts and prints its usage', async () => {
    const run = await runKafkaTool('producerPerformance', ['--help']);
    expect(run.stdout, run.stderr).toContain('usage: kafka-producer-perf-test');
  });

  it('kafka-storage starts and makes a cluster id', async () => {
    const run = await runKafkaTool('storage', ['random-uuid']);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout.trim().split('\n').at(-1)).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });
});

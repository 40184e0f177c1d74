import { execFile, execFileSync, spawn } from 'node:child_process';
import * as path from 'node:path';

const repositoryRoot = path.resolve(__dirname, '..', '..');

/**
 * The main classes of Apache Kafka's tools, as its bin/*.sh scripts start them (Kafka 4.4), on the
 * classpath that ensure-kafka-tools.sh prints.
 */
export const kafkaToolMainClasses = {
  /** kafka-console-producer.sh */
  consoleProducer: 'org.apache.kafka.tools.ConsoleProducer',
  /** kafka-console-consumer.sh */
  consoleConsumer: 'org.apache.kafka.tools.consumer.ConsoleConsumer',
  /** kafka-topics.sh */
  topics: 'org.apache.kafka.tools.TopicCommand',
  /** kafka-consumer-groups.sh (--describe, --reset-offsets, --delete-offsets) */
  consumerGroups: 'org.apache.kafka.tools.consumer.group.ConsumerGroupCommand',
  /** kafka-reassign-partitions.sh */
  reassignPartitions: 'org.apache.kafka.tools.reassign.ReassignPartitionsCommand',
  /** kafka-configs.sh (users' SCRAM credentials, topic and broker configs) */
  configs: 'org.apache.kafka.tools.ConfigCommand',
  /** kafka-log-dirs.sh */
  logDirs: 'org.apache.kafka.tools.LogDirsCommand',
  /** kafka-acls.sh */
  acls: 'org.apache.kafka.tools.AclCommand',
  /** kafka-get-offsets.sh */
  getOffsets: 'org.apache.kafka.tools.GetOffsetShell',
  /** kafka-producer-perf-test.sh */
  producerPerformance: 'org.apache.kafka.tools.ProducerPerformance',
  /** kafka-consumer-perf-test.sh */
  consumerPerformance: 'org.apache.kafka.tools.ConsumerPerformance',
  /** kafka-server-start.sh: Apache Kafka's broker and controller */
  broker: 'kafka.Kafka',
  /** kafka-storage.sh: formats a broker's log directories */
  storage: 'kafka.tools.StorageTool',
} as const;

export type KafkaTool = keyof typeof kafkaToolMainClasses;

let classpath: string | undefined;

/** The tools' classpath, fetched and checked by ensure-kafka-tools.sh the first time. */
export function kafkaToolsClasspath(): string {
  classpath ??= execFileSync(
    'bash',
    [path.join(repositoryRoot, 'test/support/ensure-kafka-tools.sh')],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 600_000 },
  ).trim();
  return classpath;
}

export interface KafkaToolRun {
  readonly exitCode: number;
  readonly stdout: string;
  /** Standard error without SLF4J's notice that no logging backend is bound. */
  readonly stderr: string;
}

/**
 * Runs one of Kafka's tools to its end (killed after `timeoutMs`), with `input` on its standard
 * input; resolves with its exit code and output whatever the exit code.
 */
export function runKafkaTool(
  tool: KafkaTool,
  args: readonly string[],
  options: { input?: string; timeoutMs?: number } = {},
): Promise<KafkaToolRun> {
  return new Promise((resolve) => {
    const child = execFile(
      'java',
      ['-cp', kafkaToolsClasspath(), kafkaToolMainClasses[tool], ...args],
      { timeout: options.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const exitCode = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({
          exitCode,
          stdout,
          stderr: stderr
            .split('\n')
            .filter((line) => !line.startsWith('SLF4J:'))
            .join('\n'),
        });
      },
    );
    child.stdin?.end(options.input ?? '');
  });
}

/** One of Kafka's tools left running (a console consumer in a group), until `stop`. */
export interface RunningKafkaTool {
  /** Everything it printed to standard output so far. */
  stdout(): string;
  stderr(): string;
  /**
   * SIGTERM, which runs the tool's shutdown hook (a consumer closes and leaves its group), then
   * SIGKILL if it is still running after `graceMs`; resolves with its exit code or signal.
   */
  stop(graceMs?: number): Promise<number | string>;
}

/** Starts one of Kafka's tools and returns while it runs; `stop` ends it (killed by the suite). */
export function startKafkaTool(tool: KafkaTool, args: readonly string[]): RunningKafkaTool {
  const child = spawn('java', ['-cp', kafkaToolsClasspath(), kafkaToolMainClasses[tool], ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  return {
    stdout: () => stdout,
    stderr: () =>
      stderr
        .split('\n')
        .filter((line) => !line.startsWith('SLF4J:'))
        .join('\n'),
    stop: async (graceMs = 15_000) => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

// Proves Apache Kafka's own tools (4.4.0, test/support/kafka-tools.ts), unmodified, against the
// SASL_SSL Kafka listener of `spool dev --secure`, with the client.properties it writes:
// kafka-configs creates a user's SCRAM credential (AlterUserScramCredentials: the tool salts and
// hashes the password, the cluster stores what it derives) in the user store `spool user` uses,
// describes it (DescribeClientQuotas, then DescribeUserScramCredentials), refuses too few
// iterations, deletion of a credential the user lacks and a caller without ALTER on the cluster,
// and writes nothing refused; the new user then logs in with SCRAM-SHA-256 in the console
// producer once an ACL lets it write, a wrong password is refused, and the console consumer as
// the admin user (SCRAM-SHA-512, the file as written) reads the records back. confluent-kafka
// (librdkafka) with the same file's security settings (SASL_SSL, SCRAM-SHA-512, ssl.ca.location)
// creates a topic, produces idempotently and consumes in a group; with a wrong password it fails
// and writes nothing.
//
// One cluster, one storage node; JVM start-ups dominate this file's time, each run bounded.
import { readClientProperties, Spool } from '@spool/client';
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../support/cli-process';
import { runKafkaTool, type KafkaToolRun } from '../support/kafka-tools';
import { startSpoolDev, type SpoolDevProcess } from '../support/spool-dev-process';

/** A JVM tool's run on a loaded machine: start-up is seconds, the work is small. */
const toolTimeoutMs = 45_000;
const workspaceRoot = path.resolve(__dirname, '..', '..');
const pythonClientScript = path.join(__dirname, 'confluent_kafka_client.py');

let dev: SpoolDevProcess;
let adminProperties: string;
let bootstrap: string;
let caFile: string;

/** A Java client's properties for `user` over SASL_SSL with `mechanism`. */
function javaUserProperties(user: string, password: string, mechanism: string): string {
  const file = path.join(dev.dataDirectory, `client-${user}-${password.length}.properties`);
  writeFileSync(
    file,
    [
      'security.protocol=SASL_SSL',
      `sasl.mechanism=${mechanism}`,
      'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required ' +
        `username="${user}" password="${password}";`,
      'ssl.truststore.type=PEM',
      `ssl.truststore.location=${caFile}`,
      '',
    ].join('\n'),
  );
  return file;
}

function tool(
  name: Parameters<typeof runKafkaTool>[0],
  commandConfig: string,
  args: readonly string[],
  input?: string,
): Promise<KafkaToolRun> {
  // The console producer and consumer name their client settings --command-config too in 4.x.
  return runKafkaTool(
    name,
    ['--bootstrap-server', bootstrap, '--command-config', commandConfig, ...args],
    { timeoutMs: toolTimeoutMs, ...(input === undefined ? {} : { input }) },
  );
}

function describeRun(run: KafkaToolRun): string {
  return `exit ${run.exitCode}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`;
}

function cli(argv: readonly string[]) {
  return runCli(['--command-config', adminProperties, ...argv]);
}

/** Each user's credentials as `spool user list --json` shows them (the controller's store). */
async function storedUsers(): Promise<Map<string, unknown>> {
  const listed = await cli(['user', 'list', '--json']);
  expect(listed.exitCode, listed.stderr).toBe(0);
  const { users } = JSON.parse(listed.stdout) as {
    users: { user: string; credentials: unknown }[];
  };
  return new Map(users.map((entry) => [entry.user, entry.credentials]));
}

async function highWatermark(topic: string): Promise<bigint> {
  const spool = new Spool({ ...readClientProperties(adminProperties), logLevel: 'silent' });
  try {
    const [partition] = await spool.admin().fetchTopicOffsets(topic);
    return BigInt(partition!.high);
  } finally {
    await spool.close();
  }
}

beforeAll(async () => {
  dev = await startSpoolDev(['--secure', '--nodes', '1']);
  adminProperties = path.join(dev.dataDirectory, 'client.properties');
  caFile = readFileSync(adminProperties, 'utf8').match(/^ssl\.ca\.location=(.*)$/m)![1]!;
  const gateway = dev.processes.find((entry) => entry.role === 'gateway')!;
  bootstrap = `localhost:${(gateway.ports as { kafka?: number }).kafka!}`;
}, 60_000);

/**
 * One command of test/kafka/confluent_kafka_client.py with the security settings of
 * `properties`; resolves with its JSON answer, rejects with its standard error.
 */
function confluentKafka<T>(
  properties: string,
  command: string,
  args: readonly (string | number)[],
): Promise<T> {
  const python = execFileSync(
    'bash',
    [path.join(workspaceRoot, 'test/support/ensure-python-kafka.sh')],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 300_000 },
  ).trim();
  return new Promise((resolve, reject) => {
    execFile(
      python,
      [pythonClientScript, command, bootstrap, ...args.map(String)],
      {
        timeout: toolTimeoutMs,
        env: { ...process.env, SPOOL_KAFKA_CLIENT_PROPERTIES: properties },
      },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${command} ${args.join(' ')}: ${error.message}\n${stderr}`));
        else resolve(JSON.parse(stdout) as T);
      },
    );
  });
}

afterAll(async () => {
  await dev?.stop();
});

describe("Kafka's tools over SASL_SSL on spool dev --secure", () => {
  it('kafka-configs creates and describes a SCRAM credential in the store spool user reads', async () => {
    const altered = await tool('configs', adminProperties, [
      ...['--alter', '--entity-type', 'users', '--entity-name', 'alice'],
      ...['--add-config', 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'],
    ]);
    expect(altered.exitCode, describeRun(altered)).toBe(0);
    expect(altered.stdout).toContain('Completed updating config for user alice.');
    expect((await storedUsers()).get('alice')).toEqual([
      { mechanism: 'SCRAM-SHA-256', iterations: 8192 },
    ]);

    const described = await tool('configs', adminProperties, [
      ...['--describe', '--entity-type', 'users', '--entity-name', 'alice'],
    ]);
    expect(described.exitCode, describeRun(described)).toBe(0);
    expect(described.stdout).toContain(
      "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192",
    );
    const all = await tool('configs', adminProperties, ['--describe', '--entity-type', 'users']);
    expect(all.exitCode, describeRun(all)).toBe(0);
    expect(all.stdout).toContain("SCRAM credential configs for user-principal 'admin' are");
    expect(all.stdout).toContain("user-principal 'alice' are SCRAM-SHA-256=iterations=8192");

    const unknown = await tool('configs', adminProperties, [
      ...['--describe', '--entity-type', 'users', '--entity-name', 'nobody'],
    ]);
    // RESOURCE_NOT_FOUND: the Admin client leaves the user out of its answer, as against Kafka.
    expect(unknown.exitCode, describeRun(unknown)).toBe(0);
    expect(unknown.stdout).not.toContain('nobody');
  });

  it('refuses too few iterations, a missing credential and a caller without ALTER, writing nothing', async () => {
    const before = await storedUsers();
    const fewIterations = await tool('configs', adminProperties, [
      ...['--alter', '--entity-type', 'users', '--entity-name', 'bob'],
      ...['--add-config', 'SCRAM-SHA-512=[iterations=1000,password=bob-secret]'],
    ]);
    expect(fewIterations.exitCode, describeRun(fewIterations)).not.toBe(0);
    // The tool checks the minimum itself; the controller checks it again (user-credentials.ts).
    expect(fewIterations.stderr).toContain('Iterations 1000 is less than the minimum 4096');

    const missing = await tool('configs', adminProperties, [
      ...['--alter', '--entity-type', 'users', '--entity-name', 'alice'],
      ...['--delete-config', 'SCRAM-SHA-512'],
    ]);
    expect(missing.exitCode, describeRun(missing)).not.toBe(0);
    expect(describeRun(missing)).toMatch(/ResourceNotFoundException/);

    // alice is authenticated but holds no ACL: she may not ALTER the cluster.
    const aliceProperties = javaUserProperties('alice', 'alice-secret', 'SCRAM-SHA-256');
    const byAlice = await tool('configs', aliceProperties, [
      ...['--alter', '--entity-type', 'users', '--entity-name', 'bob'],
      ...['--add-config', 'SCRAM-SHA-256=[password=bob-secret]'],
    ]);
    expect(byAlice.exitCode, describeRun(byAlice)).not.toBe(0);
    expect(describeRun(byAlice)).toMatch(/ClusterAuthorizationException/);
    const describedByAlice = await tool('configs', aliceProperties, [
      ...['--describe', '--entity-type', 'users', '--entity-name', 'alice'],
    ]);
    expect(describeRun(describedByAlice)).toMatch(/ClusterAuthorizationException/);

    expect(await storedUsers()).toEqual(before);
  });

  it('logs the new user in with SCRAM in the console producer; the admin consumes', async () => {
    const topic = await cli(['topic', 'create', 'java-secure', '--partitions', '1']);
    expect(topic.exitCode, topic.stderr).toBe(0);
    const granted = await cli([
      ...['acl', 'create', '--allow-principal', 'User:alice'],
      ...['--operation', 'Write', '--operation', 'Describe', '--topic', 'java-secure'],
    ]);
    expect(granted.exitCode, granted.stderr).toBe(0);

    // The console producer logs a failed send through SLF4J, which these tools run without, and
    // exits 0: the log end offset tells. kafka-topics prints the admin client's failure.
    const wrongProperties = javaUserProperties('alice', 'not-her-password', 'SCRAM-SHA-256');
    const wrong = await tool('consoleProducer', wrongProperties, ['--topic', 'java-secure'], 'x\n');
    expect(await highWatermark('java-secure'), describeRun(wrong)).toBe(0n);
    const wrongList = await tool('topics', wrongProperties, ['--list']);
    expect(wrongList.exitCode, describeRun(wrongList)).not.toBe(0);
    expect(describeRun(wrongList)).toMatch(/Authentication failed.*SCRAM-SHA-256/);

    const lines = Array.from({ length: 20 }, (_, index) => `value-${index}`);
    // The gateway learns of the ACL from the metadata stream, a moment after the answer.
    await vi.waitFor(
      async () => {
        const produced = await tool(
          'consoleProducer',
          javaUserProperties('alice', 'alice-secret', 'SCRAM-SHA-256'),
          ['--topic', 'java-secure', '--command-property', 'acks=all'],
          `${lines.join('\n')}\n`,
        );
        expect(produced.exitCode, describeRun(produced)).toBe(0);
        expect(await highWatermark('java-secure')).toBe(BigInt(lines.length));
      },
      { timeout: 2 * toolTimeoutMs, interval: 1_000 },
    );

    const consumed = await tool('consoleConsumer', adminProperties, [
      ...['--topic', 'java-secure', '--from-beginning'],
      ...['--max-messages', String(lines.length), '--timeout-ms', '20000'],
    ]);
    expect(consumed.exitCode, describeRun(consumed)).toBe(0);
    expect(consumed.stdout.split('\n').filter((line) => line.startsWith('value-'))).toEqual(lines);
  });

  it('serves confluent-kafka over SASL_SSL with the settings of client.properties', async () => {
    const created = await confluentKafka<{ partitions: number }>(adminProperties, 'create-topic', [
      'python-secure',
      3,
      1,
    ]);
    expect(created.partitions).toBe(3);
    const { delivered } = await confluentKafka<{ delivered: { key: string }[] }>(
      adminProperties,
      'produce',
      ['python-secure', 0, 30],
    );
    expect(delivered).toHaveLength(30);
    const { records } = await confluentKafka<{ records: { key: string; value: string }[] }>(
      adminProperties,
      'consume',
      ['python-secure', 'python-secure-group', 30],
    );
    expect(records.map((record) => record.value).sort()).toEqual(
      Array.from({ length: 30 }, (_, index) => `value-${index}`).sort(),
    );

    const wrongFile = path.join(dev.dataDirectory, 'client-wrong-password.properties');
    writeFileSync(
      wrongFile,
      readFileSync(adminProperties, 'utf8').replace(/^sasl\.password=.*$/m, 'sasl.password=wrong'),
    );
    await expect(confluentKafka(wrongFile, 'produce', ['python-secure', 30, 31])).rejects.toThrow(
      /undelivered|Authentication/,
    );
    const spool = new Spool({ ...readClientProperties(adminProperties), logLevel: 'silent' });
    try {
      const offsets = await spool.admin().fetchTopicOffsets('python-secure');
      expect(offsets.reduce((sum, entry) => sum + Number(entry.high), 0)).toBe(30);
    } finally {
      await spool.close();
    }
  });
});

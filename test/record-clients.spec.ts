// Proves that clients generated from proto/ in other languages use the record-level API on a
// real gateway (with a controller, a storage node and a coordinator as processes): a Python
// client (grpcio, stubs made by grpcio-tools' protoc from the descriptor set `buf build` makes)
// and a Go client (google.golang.org/grpc, stubs made by `buf generate` with protoc-gen-go and
// protoc-gen-go-grpc) each publish 10,000 keyed records and consume them back through a consumer
// group; every key lands on the partition the SDK's partitioner (Kafka's murmur2) picks, every
// record comes back once with its value, and each client reads a failed call's google.rpc.
// ErrorInfo with its runtime's own status helpers. grpcurl, driven by a shell script, publishes,
// subscribes and shows a bad call's status. The tools come from test/support/ensure-*.sh.
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { partitionForKey } from '@spool/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureGrpcurl } from './support/grpcurl';
import { RecordTestCluster } from './support/record-cluster';
import { workspaceRoot } from './support/service-process';

const run = promisify(execFile);
const recordCount = 10_000;
const partitionCount = 6;
const protoRoot = path.join(workspaceRoot, 'proto');
const buf = path.join(workspaceRoot, 'node_modules/.bin/buf');
const goClientRoot = path.join(workspaceRoot, 'test/clients/go');
let cluster: RecordTestCluster;
let scratch: string;

function ensureTool(script: string): string {
  return execFileSync('bash', [path.join(workspaceRoot, 'test/support', script)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 300_000,
  }).trim();
}

beforeAll(async () => {
  scratch = mkdtempSync(path.join(tmpdir(), 'spool-record-clients-'));
  cluster = await RecordTestCluster.start();
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

interface ClientReport {
  landed: Record<string, number>;
  consumed: Record<string, { partition: number; value: string }>;
  error: { grpcCode: string; reason: string; domain: string; retriable: string };
}

function expectRoundTrip(report: ClientReport): void {
  const keys = Array.from({ length: recordCount }, (_, index) => `key-${index}`);
  expect(Object.keys(report.landed)).toHaveLength(recordCount);
  for (const key of keys) {
    const partition = partitionForKey(Buffer.from(key), partitionCount);
    expect(report.landed[key], key).toBe(partition);
    expect(report.consumed[key], key).toEqual({ partition, value: `value of ${key}` });
  }
  expect(Object.keys(report.consumed)).toHaveLength(recordCount);
  expect(report.error).toEqual({
    grpcCode: expect.stringMatching(/^NOT_FOUND|NotFound$/),
    reason: 'UNKNOWN_TOPIC_OR_PARTITION',
    domain: 'spool',
    retriable: 'true',
  });
}

async function expectGroupCommitted(groupId: string, topic: string): Promise<void> {
  const [offsets] = await cluster.admin.fetchOffsets({ groupId, topics: [topic] });
  const high = await cluster.admin.fetchTopicOffsets(topic);
  const committed = new Map(offsets!.partitions.map((entry) => [entry.partition, entry.offset]));
  for (const { partition, high: highWatermark } of high) {
    expect(committed.get(partition) ?? 0n).toBe(highWatermark);
  }
}

describe('generated clients', () => {
  it('Python publishes 10,000 keyed records and consumes them back through a group', async () => {
    const python = ensureTool('ensure-python-grpc.sh');
    const generated = path.join(scratch, 'python');
    const descriptorSet = path.join(scratch, 'spool.binpb');
    execFileSync(buf, ['build', '-o', descriptorSet], { cwd: protoRoot });
    execFileSync('mkdir', ['-p', generated]);
    execFileSync(python, [
      '-m',
      'grpc_tools.protoc',
      `--descriptor_set_in=${descriptorSet}`,
      `--python_out=${generated}`,
      `--grpc_python_out=${generated}`,
      'spool/v1/record.proto',
      'spool/v1/common.proto',
    ]);
    await cluster.createTopic('python-orders', partitionCount);
    const { stdout } = await run(
      python,
      [
        path.join(workspaceRoot, 'test/clients/python/record_client.py'),
        generated,
        cluster.gatewayAddress,
        'python-orders',
        'python-group',
        String(recordCount),
      ],
      { timeout: 90_000, maxBuffer: 64 * 1024 * 1024 },
    );
    expectRoundTrip(JSON.parse(stdout) as ClientReport);
    await expectGroupCommitted('python-group', 'python-orders');
  });

  it('Go publishes 10,000 keyed records and consumes them back through a group', async () => {
    const plugins = ensureTool('ensure-go-grpc-plugins.sh');
    const environment = {
      ...process.env,
      PATH: `${plugins}:${process.env.PATH}:/usr/local/go/bin`,
      GOFLAGS: '-mod=mod',
    };
    rmSync(path.join(goClientRoot, 'gen'), { recursive: true, force: true });
    execFileSync(
      buf,
      [
        'generate',
        '--template',
        path.join(goClientRoot, 'buf.gen.yaml'),
        '--output',
        goClientRoot,
        '--path',
        'spool/v1/record.proto',
        '--path',
        'spool/v1/common.proto',
      ],
      { cwd: protoRoot, env: environment },
    );
    const binary = path.join(scratch, 'record-client');
    execFileSync('go', ['build', '-o', binary, '.'], {
      cwd: goClientRoot,
      env: environment,
      stdio: ['ignore', 'ignore', 'inherit'],
      timeout: 300_000,
    });
    await cluster.createTopic('go-orders', partitionCount);
    const { stdout } = await run(
      binary,
      [cluster.gatewayAddress, 'go-orders', 'go-group', String(recordCount)],
      { timeout: 90_000, maxBuffer: 64 * 1024 * 1024 },
    );
    expectRoundTrip(JSON.parse(stdout) as ClientReport);
    await expectGroupCommitted('go-group', 'go-orders');
  });
});

describe('grpcurl', () => {
  it('publishes, subscribes and shows a bad call from a shell script', async () => {
    const grpcurl = ensureGrpcurl();
    const topic = 'shell-events';
    await cluster.createTopic(topic, 3);
    const { stdout } = await run(
      'bash',
      [
        path.join(workspaceRoot, 'test/clients/grpcurl/record-api.sh'),
        grpcurl,
        cluster.gatewayAddress,
        topic,
      ],
      { timeout: 60_000 },
    );
    const [published, subscribed, badCall] = stdout.split(/^== \w+.*$/m).slice(1);
    const partition = partitionForKey(Buffer.from('user-1'), 3);
    expect(JSON.parse(published!)).toEqual({
      results: [{ partition }, { partition, offset: '1' }].map((result) =>
        partition === 0 ? { ...result, partition: undefined } : result,
      ),
    });
    const decoded = subscribed!
      .split(/\n(?=\{)/)
      .map((chunk) => chunk.trim())
      .filter((chunk) => chunk !== '')
      .map((chunk) => JSON.parse(chunk) as { records?: Array<Record<string, unknown>> })
      .flatMap((response) => response.records ?? []);
    expect(
      decoded.map((record) => Buffer.from(record.value as string, 'base64').toString()),
    ).toEqual(['signed up', 'logged in']);
    expect(decoded[1]!.headers).toEqual([
      { key: 'source', value: Buffer.from('shell').toString('base64') },
    ]);
    expect(badCall).toContain('Code: NotFound');
    expect(badCall).toContain('UNKNOWN_TOPIC_OR_PARTITION: topic "no-such-topic" does not exist');
    expect(badCall).toContain('"reason": "UNKNOWN_TOPIC_OR_PARTITION"');
  });
});

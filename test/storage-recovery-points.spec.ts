// Proves recovery points on a real storage node process: a partition of small segments is
// written, the node stops cleanly (its data directory's checkpoint then holds the log end), more
// segments are written, and the node is killed with SIGKILL. The next start recovers exactly the
// segments from the checkpointed recovery point on (the one holding it and every later one, as
// Kafka does), not the segments below it, says so in the partition's "log recovered" line and in
// the summary line, and keeps every acknowledged record (its log end offset).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Acks } from '@spool/protocol';
import { encodeRecordBatch } from '@spool/record-batch';
import { StorageTestCluster } from './support/storage-cluster';

let cluster: StorageTestCluster;
beforeAll(async () => {
  cluster = await StorageTestCluster.start(1);
  // About 100-byte batches, nine to a segment.
  await cluster.createTopic('events', 1, 1, [{ name: 'segment.bytes', value: '1000' }]);
}, 60_000);
afterAll(async () => cluster?.stop());

async function produce(batches: number): Promise<bigint> {
  let logEndOffset = 0n;
  for (let index = 0; index < batches; index++) {
    const records = encodeRecordBatch({
      baseOffset: 0n,
      records: [{ key: null, value: Buffer.alloc(20, 97 + (index % 26)), timestampMs: 1n }],
    });
    const result = (await cluster.append('events', 0, records, Acks.ACKS_LEADER)).results[0]!;
    expect(result.error).toBeUndefined();
    logEndOffset = result.lastOffset + 1n;
  }
  return logEndOffset;
}

function segmentBaseOffsets(): bigint[] {
  const folder = path.join(cluster.dataDirOf(0), 'events-0');
  return fs
    .readdirSync(folder)
    .filter((name) => name.endsWith('.log'))
    .map((name) => BigInt(name.slice(0, 20)))
    .sort((left, right) => (left < right ? -1 : left > right ? 1 : 0));
}

function logRecord(lines: readonly string[], message: string): Record<string, unknown> {
  const line = lines.find((candidate) => candidate.includes(`"msg":"${message}`));
  expect(line, message).toBeDefined();
  return JSON.parse(line!) as Record<string, unknown>;
}

describe('recovery points', () => {
  it('after kill -9 recovers only the segments from the recovery point on', async () => {
    const checkpointedEnd = await produce(40);
    expect(await cluster.stopNode(0, 'SIGTERM')).toBe(0);
    const checkpoint = fs.readFileSync(
      path.join(cluster.dataDirOf(0), 'recovery-point-offset-checkpoint'),
      'utf8',
    );
    expect(checkpoint).toContain(`events 0 ${checkpointedEnd}\n`);
    await cluster.startNode(0);

    const logEndOffset = await produce(30);
    expect(await cluster.stopNode(0, 'SIGKILL')).toBe('SIGKILL');
    const bases = segmentBaseOffsets();
    // A segment is trusted when the next one starts at or below the recovery point.
    const expectedScanned = bases.filter(
      (_, index) => index === bases.length - 1 || bases[index + 1]! > checkpointedEnd,
    ).length;
    // Several segments on each side of the recovery point.
    expect(expectedScanned).toBeGreaterThanOrEqual(3);
    expect(bases.length - expectedScanned).toBeGreaterThanOrEqual(3);

    const restarted = await cluster.startNode(0);
    const recovered = logRecord(restarted.logLines, 'log recovered');
    expect(recovered).toMatchObject({
      partition: 'events-0',
      clean: false,
      segmentsScanned: expectedScanned,
      bytesTruncated: 0,
      logEndOffset: String(logEndOffset),
    });
    expect(logRecord(restarted.logLines, 'local logs open')).toMatchObject({
      cleanShutdown: false,
      logsLoaded: 1,
      logsRecovered: 1,
      segmentsRecovered: expectedScanned,
      bytesTruncated: 0,
    });
  });
});

/**
 * The `records` scenario (issue 27), run only when named (`--only records`): the record-level API
 * (spool.v1.RecordService) beside the raw path (the SDK's RecordBatch v2 produce, `spool bench
 * produce`) on one storage node, RF1, acks=1, keyless records of 100 B and 1 KiB. For each:
 * records/s, and the gateway's CPU seconds per GB of record values, the figure issue 27 bounds
 * (record-level at 1 KiB within 2x the raw path's).
 *
 * The record-level load is this process's own: PublishStream requests of recordsPerCall records,
 * callsInFlight of them unanswered at once (a client generated from proto/ would do the same).
 */
import { createGrpcClient } from '@spool/common';
import {
  Acks,
  RecordServiceClient,
  type PublishRecord,
  type PublishStreamResponse,
} from '@spool/protocol';
import { gatewayAddress, log, runSpool, startCluster, type BenchCluster } from './cluster';
import type { BenchOptions } from './options';
import { measure, type Result, type ScenarioResult } from './scenarios';

const recordsPerCallBySize: Record<number, number> = { 100: 2_000, 1_024: 500 };
const callsInFlight = 8;

export async function recordsScenario(options: BenchOptions, results: Result[]): Promise<void> {
  const records = options.quick ? 50_000 : 1_000_000;
  const cluster = await startCluster(1);
  try {
    for (const recordSizeBytes of [100, 1_024]) {
      const raw = `records-raw-${recordSizeBytes}`;
      results.push(
        await measure(cluster, 8, `raw path (SDK batches) RF1 acks=1 ${recordSizeBytes} B`, [
          'produce',
          '--topic',
          raw,
          '--records',
          String(records),
          '--partitions',
          '1',
          '--replication-factor',
          '1',
          '--acks',
          '1',
          '--record-size',
          String(recordSizeBytes),
          '--batch-size',
          '1048576',
        ]),
      );
      const topic = `records-api-${recordSizeBytes}`;
      // Created as the raw path's topic is: one partition, RF1 (spool bench creates it).
      await runSpool([
        'bench',
        'produce',
        '--topic',
        topic,
        '--records',
        '1',
        '--partitions',
        '1',
        '--replication-factor',
        '1',
      ]);
      results.push(await measureRecordApi(cluster, topic, records, recordSizeBytes));
    }
  } finally {
    await cluster.stop();
  }
}

async function measureRecordApi(
  cluster: BenchCluster,
  topic: string,
  records: number,
  recordSizeBytes: number,
): Promise<ScenarioResult> {
  const label = `record-level Publish RF1 acks=1 ${recordSizeBytes} B`;
  log(`scenario 8: ${label}`);
  const recordsPerCall = recordsPerCallBySize[recordSizeBytes]!;
  const value = Buffer.alloc(recordSizeBytes, 'x');
  const batch: PublishRecord[] = Array.from({ length: recordsPerCall }, () => ({
    value,
    headers: [],
  }));
  const client = createGrpcClient(RecordServiceClient, gatewayAddress);
  const before = cluster.cpuSeconds();
  const startedAtMs = performance.now();
  const calls = Math.ceil(records / recordsPerCall);
  const latenciesMs: number[] = [];
  await new Promise<void>((resolve, reject) => {
    const stream = client.publishStream();
    const sentAtMs = new Map<bigint, number>();
    let sent = 0;
    let answered = 0;
    const sendNext = (): void => {
      while (sent < calls && sent - answered < callsInFlight) {
        const sequence = BigInt(sent++);
        sentAtMs.set(sequence, performance.now());
        stream.write({
          sequence,
          request: {
            topic,
            records: batch,
            acks: Acks.ACKS_LEADER,
            idempotencyKey: '',
            timeoutMs: 0,
          },
        });
      }
    };
    stream.on('data', (answer: PublishStreamResponse) => {
      const failed = answer.error ?? answer.response?.results.find((result) => result.error)?.error;
      if (failed !== undefined) {
        reject(new Error(`${failed.code}: ${failed.message}`));
        stream.cancel();
        return;
      }
      latenciesMs.push(performance.now() - sentAtMs.get(answer.sequence)!);
      answered += 1;
      if (answered === calls) stream.end();
      else sendNext();
    });
    stream.on('error', reject);
    stream.on('end', resolve);
    sendNext();
  });
  const elapsedMs = performance.now() - startedAtMs;
  const after = cluster.cpuSeconds();
  client.close();
  const count = calls * recordsPerCall;
  const bytes = count * recordSizeBytes;
  const cpuSeconds = Object.fromEntries(
    Object.keys(after).map((name) => [
      name,
      Math.round((after[name]! - before[name]!) * 100) / 100,
    ]),
  );
  const gigabytes = bytes / 1024 ** 3;
  const storageSeconds = Object.entries(cpuSeconds)
    .filter(([name]) => name.startsWith('storage-node'))
    .reduce((sum, [, seconds]) => sum + seconds, 0);
  latenciesMs.sort((a, b) => a - b);
  const at = (quantile: number): number =>
    Math.round(
      latenciesMs[Math.min(latenciesMs.length - 1, Math.floor(quantile * latenciesMs.length))]! *
        10,
    ) / 10;
  return {
    scenario: 8,
    label,
    mode: 'produce',
    bytes,
    recordsPerSec: Math.round(count / (elapsedMs / 1000)),
    mbPerSec: Math.round((bytes / 1024 ** 2 / (elapsedMs / 1000)) * 10) / 10,
    avgMs:
      Math.round((latenciesMs.reduce((sum, ms) => sum + ms, 0) / latenciesMs.length) * 10) / 10,
    p50Ms: at(0.5),
    p95Ms: at(0.95),
    p99Ms: at(0.99),
    p999Ms: at(0.999),
    maxMs: at(1),
    cpuSeconds,
    cpuWindow: 'run',
    cpuWindowSeconds: Math.round(elapsedMs) / 1000,
    runSeconds: Math.round(elapsedMs) / 1000,
    storageCpuSecondsPerGb: Math.round((storageSeconds / gigabytes) * 10) / 10,
    gatewayCpuSecondsPerGb: Math.round((cpuSeconds.gateway! / gigabytes) * 10) / 10,
  };
}

import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import type { Spool } from '@spool/client';
import { eventually } from '../support/controller-client';
import type { FaultCluster } from './harness/fault-cluster';
import { consecutiveRuns, type HistoryWriter } from './history';

/**
 * The final phase of a fault run, once every fault is healed: wait until every partition has its
 * full ISR again, read every partition from its start up to its high watermark through the
 * gateway, and compare the replicas' bytes on disk below the high watermark. Everything found
 * goes into the history for the checker. Every wait is bounded.
 */
const fullIsrTimeoutMs = 90_000;
const readTimeoutMs = 90_000;
const replicasCatchUpTimeoutMs = 30_000;

export async function waitForFullIsr(
  cluster: FaultCluster,
  topic: string,
  replicationFactor: number,
): Promise<void> {
  await eventually(
    async () => {
      const described = await cluster.withController((client) =>
        client.call(client.client.describeTopics, { names: [topic] }),
      );
      const partitions = described.topics[0]?.topic?.partitions ?? [];
      const short = partitions.filter(
        (partition) => partition.isr.length < replicationFactor || partition.offline,
      );
      if (partitions.length === 0 || short.length > 0) {
        throw new Error(
          `partitions without a full ISR: ${short.map((partition) => `${partition.partition}:${partition.isr.join(',')}`).join(' ')}`,
        );
      }
    },
    fullIsrTimeoutMs,
    500,
  );
}

/** High watermarks through the gateway, retried until it answers. */
export async function highWatermarks(spool: Spool, topic: string): Promise<Map<number, bigint>> {
  const admin = spool.admin({ requestTimeoutMs: 5_000, retries: 3 });
  try {
    const offsets = await eventually(() => admin.fetchTopicOffsets(topic), 60_000, 500);
    return new Map(offsets.map((entry) => [entry.partition, entry.high]));
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** Reads each partition from offset 0 to its high watermark and records every record. */
export async function finalRead(
  spool: Spool,
  topic: string,
  highWatermarkOf: Map<number, bigint>,
  history: HistoryWriter,
): Promise<void> {
  for (const [partition, highWatermark] of highWatermarkOf) {
    history.append({ type: 'high-watermark', partition, offset: highWatermark.toString() });
  }
  const consumer = spool.consumer({ autoOffsetReset: 'earliest', retries: 100 });
  const nextOffset = new Map<number, bigint>();
  const done = (): boolean =>
    [...highWatermarkOf].every(
      ([partition, highWatermark]) => (nextOffset.get(partition) ?? 0n) >= highWatermark,
    );
  try {
    consumer.assign(
      [...highWatermarkOf.keys()].map((partition) => ({ topic, partition, offset: 0n })),
    );
    let crash: Error | undefined;
    consumer.on('crash', (error) => (crash = error));
    await consumer.run({
      eachBatch: async ({ batch }) => {
        const highWatermark = highWatermarkOf.get(batch.partition)!;
        const below = batch.messages.filter((message) => message.offset < highWatermark);
        if (below.length === 0) return;
        const records = below.map((message) => ({
          offset: message.offset,
          value: message.value?.toString() ?? '',
        }));
        for (const run of consecutiveRuns(records)) {
          history.append({
            type: 'read',
            partition: batch.partition,
            offset: run.offset.toString(),
            values: run.values,
          });
        }
        nextOffset.set(batch.partition, below.at(-1)!.offset + 1n);
      },
    });
    const deadline = Date.now() + readTimeoutMs;
    while (!done()) {
      if (crash !== undefined) throw crash;
      if (Date.now() > deadline) {
        throw new Error(
          `the final read did not reach the high watermarks within ${readTimeoutMs} ms: ` +
            [...highWatermarkOf]
              .map(
                ([partition, high]) => `${partition}: ${nextOffset.get(partition) ?? 0n}/${high}`,
              )
              .join(', '),
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await consumer.disconnect().catch(() => undefined);
  }
}

/**
 * A replica's bytes below the high watermark: its segment files concatenated in base-offset
 * order, cut after the last batch that ends below the high watermark. Undefined if the replica
 * does not (yet) hold every offset below it.
 */
export function replicaBytesBelow(
  dataDir: string,
  topic: string,
  partition: number,
  highWatermark: bigint,
): Buffer | undefined {
  const folder = path.join(dataDir, `${topic}-${partition}`);
  let segments: string[];
  try {
    segments = readdirSync(folder)
      .filter((name) => name.endsWith('.log'))
      .sort();
  } catch {
    return highWatermark === 0n ? Buffer.alloc(0) : undefined;
  }
  const bytes = Buffer.concat(segments.map((name) => readFileSync(path.join(folder, name))));
  let position = 0;
  let nextOffset = 0n;
  // RecordBatch v2: baseOffset int64 at 0, batchLength int32 at 8 (bytes after it), and
  // lastOffsetDelta int32 at 23.
  while (position + 27 <= bytes.length) {
    const baseOffset = bytes.readBigInt64BE(position);
    const sizeBytes = 12 + bytes.readInt32BE(position + 8);
    const lastOffset = baseOffset + BigInt(bytes.readInt32BE(position + 23));
    if (lastOffset >= highWatermark || position + sizeBytes > bytes.length) break;
    position += sizeBytes;
    nextOffset = lastOffset + 1n;
  }
  return nextOffset >= highWatermark ? bytes.subarray(0, position) : undefined;
}

/**
 * Compares the replicas of each partition below its high watermark, waiting (bounded) for a
 * replica that is still catching up, and records the outcome per partition.
 */
export async function compareReplicas(
  cluster: FaultCluster,
  topic: string,
  brokerIds: readonly number[],
  highWatermarkOf: Map<number, bigint>,
  history: HistoryWriter,
): Promise<void> {
  for (const [partition, highWatermark] of highWatermarkOf) {
    const deadline = Date.now() + replicasCatchUpTimeoutMs;
    for (;;) {
      const bytesOf = brokerIds.map((brokerId) =>
        replicaBytesBelow(cluster.storageDataDir(brokerId), topic, partition, highWatermark),
      );
      // The bytes most replicas hold are the reference: one odd replica is the one named.
      const reference = bytesOf
        .filter((bytes) => bytes !== undefined)
        .sort(
          (left, right) =>
            bytesOf.filter((bytes) => bytes?.equals(right)).length -
            bytesOf.filter((bytes) => bytes?.equals(left)).length,
        )[0];
      const differing = brokerIds.filter(
        (_, index) =>
          bytesOf[index] === undefined ||
          reference === undefined ||
          !bytesOf[index]!.equals(reference),
      );
      if (differing.length === 0 || Date.now() > deadline) {
        history.append({
          type: 'replicas',
          partition,
          highWatermark: highWatermark.toString(),
          compared: [...brokerIds],
          differing,
          ...(differing.length === 0
            ? {}
            : {
                detail: brokerIds
                  .map(
                    (brokerId, index) =>
                      `${brokerId}: ${bytesOf[index] === undefined ? 'short of the high watermark' : `${bytesOf[index]!.length} bytes`}`,
                  )
                  .join('; '),
              }),
        });
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

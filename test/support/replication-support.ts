import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { Acks } from '@spool/protocol';
import { decodeRecordBatches, encodeRecordBatch } from '@spool/record-batch';
import type { StorageTestCluster } from './storage-cluster';

/** One record whose value is its label, as a producer's batch. */
export function recordBatch(label: string): Buffer {
  return encodeRecordBatch({
    baseOffset: 0n,
    records: [
      { key: Buffer.from(label), value: Buffer.from(label), timestampMs: BigInt(Date.now()) },
    ],
  });
}

export interface Acknowledged {
  readonly partition: number;
  readonly offset: bigint;
  readonly value: string;
}

/**
 * Produces one record, retrying retriable failures (a leader moving, a node restarting) against
 * whichever broker leads, as a Kafka producer with retries does. Resolves with the acknowledged
 * offset, or rejects with the last error after `attempts`.
 */
export async function produceWithRetry(
  cluster: StorageTestCluster,
  topic: string,
  partition: number,
  label: string,
  acks = Acks.ACKS_ALL,
  attempts = 100,
): Promise<bigint> {
  let lastError = 'no attempt';
  for (let attempt = 0; attempt < attempts; attempt++) {
    try {
      const result = (await cluster.append(topic, partition, recordBatch(label), acks)).results[0]!;
      if (result.error === undefined) return result.baseOffset;
      lastError = `${result.error.code}: ${result.error.message}`;
      if (!result.error.retriable) throw new Error(lastError);
    } catch (error) {
      lastError = (error as Error).message;
      if (/INVALID|CORRUPT|TOO_LARGE/.test(lastError)) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`record ${label} was never acknowledged: ${lastError}`);
}

/** Every record in a replica's segment files on disk, in offset order. */
export function recordsOnDisk(
  dataDir: string,
  topic: string,
  partition: number,
): Array<{ offset: bigint; value: string }> {
  return decodeRecordBatches(logBytesOnDisk(dataDir, topic, partition)).flatMap((batch) =>
    batch.records.map((record) => ({
      offset: record.offset,
      value: record.value?.toString() ?? '',
    })),
  );
}

/** A replica's segment files concatenated in base-offset order. */
export function logBytesOnDisk(dataDir: string, topic: string, partition: number): Buffer {
  const folder = path.join(dataDir, `${topic}-${partition}`);
  const segments = readdirSync(folder)
    .filter((name) => name.endsWith('.log'))
    .sort();
  return Buffer.concat(segments.map((name) => readFileSync(path.join(folder, name))));
}

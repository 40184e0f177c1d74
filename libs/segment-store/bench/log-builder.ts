// Fills a fresh log with the pool's batches up to a size, for the read and transfer
// measurements, then makes it durable so that no writeback runs while they are timed.
import * as path from 'node:path';
import { Log } from './package-under-test';
import { resetForProduce, type BatchPool } from './batch-pool';

export interface BuiltLog {
  readonly log: Log;
  readonly sizeBytes: number;
}

export async function buildLog(
  parentDirectory: string,
  name: string,
  pool: BatchPool,
  sizeBytesWanted: number,
): Promise<BuiltLog> {
  const { log } = await Log.open(path.join(parentDirectory, name));
  const batchCount = Math.max(1, Math.floor(sizeBytesWanted / pool.batchSizeBytes));
  for (let index = 0; index < batchCount; index++) {
    const batch = resetForProduce(pool.batches[index % pool.batches.length]!);
    log.append(batch, { leaderEpoch: 0, assignOffsets: true });
  }
  await log.flush();
  return { log, sizeBytes: log.sizeBytes };
}

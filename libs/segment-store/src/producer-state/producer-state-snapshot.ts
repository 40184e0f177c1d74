/**
 * Producer state snapshots (Kafka's `<offset>.snapshot` files of the ProducerStateManager): the
 * producers of a partition as of a log offset, so a restart replays only the batch headers
 * after the newest snapshot instead of the whole log.
 *
 * File naming: `<offset, 20 digits>.snapshot` in the partition folder, beside the segments; the
 * offset is the log end offset the state covers (every batch below it, none at or above it).
 *
 * Layout (big-endian):
 *
 *   position  size  field
 *   0         2     version           int16: 1
 *   2         4     crc               uint32: CRC-32C of every byte after this field
 *   6         8     snapshotOffset    int64: repeats the file name's offset
 *   14        4     producerCount     int32
 *   18        …     producers, each:
 *                     8  producerId        int64
 *                     2  producerEpoch     int16
 *                     8  lastTimestampMs   int64
 *                     1  batchCount        int8, 1 to 5
 *                     batchCount × 32 bytes, oldest first:
 *                       4  baseSequence  int32
 *                       4  lastSequence  int32
 *                       8  baseOffset    int64
 *                       8  lastOffset    int64
 *                       8  timestampMs   int64
 *
 * When written: at every segment roll (the state as of the new segment's base offset, Kafka's
 * takeSnapshot on roll) and on a clean shutdown (as of the log end offset, fsynced).
 *
 * Crash story:
 *   1. A snapshot is written to `<name>.tmp` and renamed over its name, so a reader never sees
 *      half a file under a snapshot name. Leftover `.tmp` files are deleted when the log opens.
 *   2. A roll's snapshot is not fsynced (it is on the append path): after a crash it may be
 *      empty or torn. The CRC and the sizes catch that; a bad snapshot is deleted and an older
 *      one (or the log from its start) is used instead. Nothing is lost, only time.
 *   3. A snapshot past the log end (the log lost its tail in recovery, or a follower truncated)
 *      describes batches that are gone: loading deletes it.
 *
 * Interleaving: the storage node writes and reads snapshots only from the synchronous append,
 * truncation, open and close paths of one partition, so two never overlap for a partition.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { crc32c } from '@spool/record-batch';
import { producerBatchesRetained, type ProducerStateEntry } from './producer-state-manager';

export const producerSnapshotVersion = 1;
const snapshotSuffix = '.snapshot';
const headerSizeBytes = 18;
const producerHeaderSizeBytes = 19;
const batchSizeBytes = 32;
const crcStartPosition = 6;

export function producerSnapshotFileName(offset: bigint): string {
  return `${offset.toString().padStart(20, '0')}${snapshotSuffix}`;
}

/** Snapshot offsets in the folder, ascending. */
export function listProducerSnapshots(directory: string): bigint[] {
  let names: string[];
  try {
    names = fs.readdirSync(directory);
  } catch {
    return [];
  }
  return names
    .filter((name) => /^\d{20}\.snapshot$/.test(name))
    .map((name) => BigInt(name.slice(0, 20)))
    .sort((left, right) => (left < right ? -1 : left > right ? 1 : 0));
}

export function deleteProducerSnapshot(directory: string, offset: bigint): void {
  fs.rmSync(path.join(directory, producerSnapshotFileName(offset)), { force: true });
}

export function encodeProducerSnapshot(
  offset: bigint,
  producers: Iterable<ProducerStateEntry>,
): Buffer {
  const entries = [...producers].filter((entry) => entry.batches.length > 0);
  let sizeBytes = headerSizeBytes;
  for (const entry of entries) {
    sizeBytes += producerHeaderSizeBytes + entry.batches.length * batchSizeBytes;
  }
  const buffer = Buffer.alloc(sizeBytes);
  buffer.writeInt16BE(producerSnapshotVersion, 0);
  buffer.writeBigInt64BE(offset, 6);
  buffer.writeInt32BE(entries.length, 14);
  let position = headerSizeBytes;
  for (const entry of entries) {
    buffer.writeBigInt64BE(entry.producerId, position);
    buffer.writeInt16BE(entry.producerEpoch, position + 8);
    buffer.writeBigInt64BE(BigInt(entry.lastTimestampMs), position + 10);
    buffer.writeInt8(entry.batches.length, position + 18);
    position += producerHeaderSizeBytes;
    for (const batch of entry.batches) {
      buffer.writeInt32BE(batch.baseSequence, position);
      buffer.writeInt32BE(batch.lastSequence, position + 4);
      buffer.writeBigInt64BE(batch.baseOffset, position + 8);
      buffer.writeBigInt64BE(batch.lastOffset, position + 16);
      buffer.writeBigInt64BE(BigInt(batch.timestampMs), position + 24);
      position += batchSizeBytes;
    }
  }
  buffer.writeUInt32BE(crc32c(buffer, crcStartPosition, buffer.length), 2);
  return buffer;
}

/** The producers of a snapshot; throws an Error naming the problem when the bytes are bad. */
export function decodeProducerSnapshot(
  bytes: Buffer,
  expectedOffset: bigint,
): ProducerStateEntry[] {
  if (bytes.length < headerSizeBytes) throw new Error(`${bytes.length} bytes, below the header`);
  const version = bytes.readInt16BE(0);
  if (version !== producerSnapshotVersion) throw new Error(`version ${version} is unknown`);
  const storedCrc = bytes.readUInt32BE(2);
  const computedCrc = crc32c(bytes, crcStartPosition, bytes.length);
  if (storedCrc !== computedCrc) {
    throw new Error(`CRC mismatch: stored ${storedCrc}, computed ${computedCrc}`);
  }
  const offset = bytes.readBigInt64BE(6);
  if (offset !== expectedOffset) {
    throw new Error(`it holds offset ${offset} but its name says ${expectedOffset}`);
  }
  const count = bytes.readInt32BE(14);
  const entries: ProducerStateEntry[] = [];
  let position = headerSizeBytes;
  for (let index = 0; index < count; index++) {
    if (position + producerHeaderSizeBytes > bytes.length) throw new Error('producers overrun');
    const producerId = bytes.readBigInt64BE(position);
    const producerEpoch = bytes.readInt16BE(position + 8);
    const lastTimestampMs = Number(bytes.readBigInt64BE(position + 10));
    const batchCount = bytes.readInt8(position + 18);
    position += producerHeaderSizeBytes;
    if (
      producerId < 0n ||
      producerEpoch < 0 ||
      batchCount < 1 ||
      batchCount > producerBatchesRetained
    ) {
      throw new Error(`producer ${producerId} epoch ${producerEpoch} with ${batchCount} batches`);
    }
    if (position + batchCount * batchSizeBytes > bytes.length) throw new Error('batches overrun');
    const batches = [];
    for (let batch = 0; batch < batchCount; batch++) {
      batches.push({
        baseSequence: bytes.readInt32BE(position),
        lastSequence: bytes.readInt32BE(position + 4),
        baseOffset: bytes.readBigInt64BE(position + 8),
        lastOffset: bytes.readBigInt64BE(position + 16),
        timestampMs: Number(bytes.readBigInt64BE(position + 24)),
      });
      position += batchSizeBytes;
    }
    entries.push({ producerId, producerEpoch, batches, lastTimestampMs });
  }
  if (position !== bytes.length)
    throw new Error(`${bytes.length - position} bytes after the producers`);
  return entries;
}

/** Writes the snapshot atomically (crash story 1); `durable` also fsyncs file and folder. */
export function writeProducerSnapshot(
  directory: string,
  offset: bigint,
  producers: Iterable<ProducerStateEntry>,
  durable: boolean,
): void {
  const file = path.join(directory, producerSnapshotFileName(offset));
  const temporary = `${file}.tmp`;
  const descriptor = fs.openSync(temporary, 'w');
  try {
    fs.writeSync(descriptor, encodeProducerSnapshot(offset, producers));
    if (durable) fs.fsyncSync(descriptor);
  } finally {
    fs.closeSync(descriptor);
  }
  fs.renameSync(temporary, file);
  if (durable) {
    const folder = fs.openSync(directory, 'r');
    try {
      fs.fsyncSync(folder);
    } finally {
      fs.closeSync(folder);
    }
  }
}

export function readProducerSnapshot(directory: string, offset: bigint): ProducerStateEntry[] {
  return decodeProducerSnapshot(
    fs.readFileSync(path.join(directory, producerSnapshotFileName(offset))),
    offset,
  );
}

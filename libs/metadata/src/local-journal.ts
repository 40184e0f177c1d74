/**
 * The local metadata store's one durable file: a snapshot followed by an append-only journal.
 *
 * File naming: the store's configured path, e.g. `<data-dir>/metadata.journal`. Beside it live
 * `<path>.tmp` (a snapshot being written; garbage after a crash, removed on open) and
 * `<path>.lock` (the owner's pid; see local-store-lock.ts).
 *
 * On-disk layout (all integers big-endian):
 *
 *   offset 0   8 bytes   magic "SPOOLMD1" (format version 1)
 *   offset 8   records, back to back, each:
 *                 0  uint32   payload length N in bytes (1 ≤ N ≤ recordBytesMax)
 *                 4  uint32   CRC-32C of the payload
 *                 8  N bytes  payload: UTF-8 JSON, one of
 *                   {"type":"snapshot","revision":"12","keyValues":[keyValue...]}
 *                   {"type":"change","revision":"13","writes":[{"put":keyValue}|{"delete":key}]}
 *              where keyValue = {"key","value"(base64),"createRevision","modRevision","version",
 *              "lease"}, revisions as decimal strings.
 *
 * The first record is always a snapshot: the whole key space at its revision. Every later
 * record is the change of exactly the next revision. Replaying the snapshot and then the changes
 * in order rebuilds the store; the changes also refill the watch history.
 *
 * Crash story:
 *   1. A change is written at the end of the file and fdatasync'ed before the write resolves, and
 *      writes are serialized, so only the last record can be incomplete after a crash. Recovery
 *      reads records until the first one whose header, length or CRC is bad (a torn tail: the
 *      crash came mid-write, or the file system extended the file with zeros), truncates the
 *      file there, syncs it, and reports how many bytes it cut. Every write that resolved is
 *      before that point.
 *   2. A record whose CRC holds but whose content does not make sense (bad JSON, a revision out
 *      of sequence) was written by a bug or another program; recovery stops with
 *      METADATA_STORE_CORRUPT naming the file and position rather than guess.
 *   3. Compaction writes a fresh file (magic and one snapshot) to `<path>.tmp`, fsyncs it, renames
 *      it over `<path>` and fsyncs the folder. A crash before the rename leaves the old file
 *      (and a stray `.tmp`, deleted on open); after it, the new one. A file whose magic or first
 *      snapshot is bad therefore never comes from a crash, so it is reported as corrupt too.
 *   4. A new store is created the same way, so an existing file always starts with a snapshot.
 *
 * Interleaving: the store serializes every append and compaction through its write queue; this
 * module assumes one call at a time on a `JournalFile` and says so in the `...Locked` names.
 * Recovery runs once, at open, before the file is shared with anything.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { assert } from '@spool/common';
import { crc32c } from '@spool/record-batch';
import { MetadataStoreError } from './errors';
import { KeySpace, type Change, type KeyWrite } from './local-key-space';
import type { KeyValue } from './metadata-store';

export const journalMagic = Buffer.from('SPOOLMD1', 'latin1');
export const recordHeaderBytes = 8;
/** A record larger than this is not metadata; a length field above it is a torn header. */
export const recordBytesMax = 256 * 1024 * 1024;

export interface Snapshot {
  readonly revision: bigint;
  readonly keyValues: readonly KeyValue[];
}

export type JournalRecord =
  ({ readonly type: 'snapshot' } & Snapshot) | ({ readonly type: 'change' } & Change);

/** What recovery found and what it cut, for the log and for tests. */
export interface JournalRecoveryReport {
  readonly filePath: string;
  /** The file did not exist and an empty store was created. */
  readonly created: boolean;
  readonly snapshotRevision: bigint;
  /** Records that passed every check, the snapshot included. */
  readonly recordsValid: number;
  /** The revision of the last valid record. */
  readonly lastRevision: bigint;
  /** The position the torn tail started at, undefined when there was none. */
  readonly truncatedAtPosition: number | undefined;
  readonly bytesTruncated: number;
}

export interface JournalRecovery {
  /** The key space as of the last valid record. */
  readonly keySpace: KeySpace;
  /** The changes after the snapshot, in order: the watch history a restart can replay. */
  readonly changes: readonly Change[];
  readonly endPosition: number;
  readonly report: JournalRecoveryReport;
}

export function encodeRecord(record: JournalRecord): Buffer {
  const payload = Buffer.from(JSON.stringify(recordToJson(record)), 'utf8');
  assert(payload.length <= recordBytesMax, 'a journal record fits recordBytesMax');
  const header = Buffer.alloc(recordHeaderBytes);
  header.writeUInt32BE(payload.length, 0);
  header.writeUInt32BE(crc32c(payload), 4);
  return Buffer.concat([header, payload]);
}

/**
 * Opens the journal for recovery: creates it when absent, then scans, validates, stops at the
 * first bad record, truncates the torn tail and returns what it rebuilt and a report (see the
 * crash story above). Synchronous: it runs once, at open, before anything else touches the file.
 */
export function recoverJournal(filePath: string): JournalRecovery {
  fs.rmSync(`${filePath}.tmp`, { force: true });
  let created = false;
  if (!fs.existsSync(filePath)) {
    writeSnapshotFile(filePath, { revision: 1n, keyValues: [] });
    created = true;
  }
  const bytes = fs.readFileSync(filePath);
  const snapshot = readSnapshot(filePath, bytes);
  let position = snapshot.endPosition;
  const keySpace = new KeySpace(snapshot.revision, snapshot.keyValues);
  const changes: Change[] = [];
  let lastRevision = snapshot.revision;
  let truncatedAtPosition: number | undefined;
  while (position < bytes.length) {
    const read = readRecordAt(bytes, position);
    if (read.kind === 'torn') {
      truncatedAtPosition = position;
      break;
    }
    const record = decodePayload(filePath, position, read.payload);
    if (record.type !== 'change' || record.revision !== lastRevision + 1n) {
      throw corrupt(
        filePath,
        position,
        `expected the change of revision ${lastRevision + 1n}, found a ${record.type} of ` +
          `revision ${record.revision}`,
      );
    }
    const absent = record.writes.find(
      (write) => write.kind === 'delete' && keySpace.get(write.key) === undefined,
    );
    if (absent !== undefined) {
      throw corrupt(filePath, position, `revision ${record.revision} deletes an absent key`);
    }
    keySpace.apply(record);
    changes.push(record);
    lastRevision = record.revision;
    position += read.sizeBytes;
  }
  const bytesTruncated = bytes.length - position;
  if (bytesTruncated > 0) truncateAndSync(filePath, position);
  return {
    keySpace,
    changes,
    endPosition: position,
    report: {
      filePath,
      created,
      snapshotRevision: snapshot.revision,
      recordsValid: 1 + changes.length,
      lastRevision,
      truncatedAtPosition,
      bytesTruncated,
    },
  };
}

/** The magic and the snapshot every file starts with (crash story, cases 3 and 4). */
function readSnapshot(filePath: string, bytes: Buffer): Snapshot & { endPosition: number } {
  if (bytes.length < journalMagic.length || !bytes.subarray(0, 8).equals(journalMagic)) {
    throw corrupt(filePath, 0, 'the file does not start with the magic "SPOOLMD1"');
  }
  const position = journalMagic.length;
  const read = readRecordAt(bytes, position);
  if (read.kind !== 'valid') {
    throw corrupt(filePath, position, `the snapshot record is unreadable (${read.reason})`);
  }
  const record = decodePayload(filePath, position, read.payload);
  if (record.type !== 'snapshot') {
    throw corrupt(filePath, position, 'the first record is not a snapshot');
  }
  return { ...record, endPosition: position + read.sizeBytes };
}

/**
 * Writes a file holding the magic and one snapshot, atomically: `<path>.tmp`, fsync, rename over
 * `<path>`, fsync the folder. Used to create the store and to compact its journal.
 */
export function writeSnapshotFile(filePath: string, snapshot: Snapshot): number {
  const temporaryPath = `${filePath}.tmp`;
  const contents = Buffer.concat([journalMagic, encodeRecord({ type: 'snapshot', ...snapshot })]);
  const fd = fs.openSync(temporaryPath, 'w');
  try {
    for (let written = 0; written < contents.length;) {
      written += fs.writeSync(fd, contents, written, contents.length - written);
    }
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temporaryPath, filePath);
  fsyncDirectory(path.dirname(filePath));
  return contents.length;
}

/** The journal open for appends. One call at a time: the store's write queue guarantees it. */
export class JournalFile {
  private constructor(
    readonly filePath: string,
    private handle: fs.promises.FileHandle,
    private endPositionValue: number,
    private snapshotBytesValue: number,
  ) {}

  static async open(filePath: string, endPosition: number): Promise<JournalFile> {
    const handle = await fs.promises.open(filePath, 'r+');
    return new JournalFile(filePath, handle, endPosition, endPosition);
  }

  /** Bytes in the file: the snapshot and every change appended since. */
  get endPosition(): number {
    return this.endPositionValue;
  }

  /** Bytes appended since the snapshot: what a compaction would reclaim. */
  get appendedBytes(): number {
    return this.endPositionValue - this.snapshotBytesValue;
  }

  get snapshotBytes(): number {
    return this.snapshotBytesValue;
  }

  /** Appends the change and resolves once it is on disk (fdatasync). */
  async appendLocked(change: Change): Promise<void> {
    const record = encodeRecord({ type: 'change', ...change });
    let written = 0;
    while (written < record.length) {
      const { bytesWritten } = await this.handle.write(
        record,
        written,
        record.length - written,
        this.endPositionValue + written,
      );
      written += bytesWritten;
    }
    await this.handle.datasync();
    this.endPositionValue += record.length;
  }

  /** Replaces the file with one snapshot of the whole key space (crash story, case 3). */
  async compactLocked(snapshot: Snapshot): Promise<void> {
    const sizeBytes = writeSnapshotFile(this.filePath, snapshot);
    await this.handle.close();
    this.handle = await fs.promises.open(this.filePath, 'r+');
    this.endPositionValue = sizeBytes;
    this.snapshotBytesValue = sizeBytes;
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}

type RecordRead =
  | { readonly kind: 'valid'; readonly payload: Buffer; readonly sizeBytes: number }
  | { readonly kind: 'torn'; readonly reason: string };

function readRecordAt(bytes: Buffer, position: number): RecordRead {
  const remaining = bytes.length - position;
  if (remaining < recordHeaderBytes) return { kind: 'torn', reason: 'header cut short' };
  const payloadBytes = bytes.readUInt32BE(position);
  if (payloadBytes === 0 || payloadBytes > recordBytesMax) {
    return { kind: 'torn', reason: `impossible length ${payloadBytes}` };
  }
  if (payloadBytes > remaining - recordHeaderBytes) {
    return { kind: 'torn', reason: 'payload cut short' };
  }
  const start = position + recordHeaderBytes;
  const payload = bytes.subarray(start, start + payloadBytes);
  if (crc32c(payload) !== bytes.readUInt32BE(position + 4)) {
    return { kind: 'torn', reason: 'CRC mismatch' };
  }
  return { kind: 'valid', payload, sizeBytes: recordHeaderBytes + payloadBytes };
}

function truncateAndSync(filePath: string, sizeBytes: number): void {
  const fd = fs.openSync(filePath, 'r+');
  try {
    fs.ftruncateSync(fd, sizeBytes);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function fsyncDirectory(directory: string): void {
  const fd = fs.openSync(directory, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function corrupt(filePath: string, position: number, reason: string): MetadataStoreError {
  return new MetadataStoreError(
    'METADATA_STORE_CORRUPT',
    `metadata journal ${filePath} is corrupt at position ${position}: ${reason}`,
  );
}

// JSON encoding. Revisions travel as decimal strings (JSON has no 64-bit integers), values as
// base64. Decoding checks every field: the CRC proves the bytes are the ones written, not that
// the writer was right.

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function recordToJson(record: JournalRecord): Json {
  if (record.type === 'snapshot') {
    return {
      type: 'snapshot',
      revision: String(record.revision),
      keyValues: record.keyValues.map(keyValueToJson),
    };
  }
  return {
    type: 'change',
    revision: String(record.revision),
    writes: record.writes.map((write): Json =>
      write.kind === 'put' ? { put: keyValueToJson(write.keyValue) } : { delete: write.key },
    ),
  };
}

function keyValueToJson(keyValue: KeyValue): Json {
  return {
    key: keyValue.key,
    value: keyValue.value.toString('base64'),
    createRevision: String(keyValue.createRevision),
    modRevision: String(keyValue.modRevision),
    version: String(keyValue.version),
    lease: String(keyValue.lease),
  };
}

class PayloadFormatError extends Error {}

function decodePayload(filePath: string, position: number, payload: Buffer): JournalRecord {
  try {
    return recordFromJson(JSON.parse(payload.toString('utf8')) as Json);
  } catch (error) {
    if (!(error instanceof SyntaxError || error instanceof PayloadFormatError)) throw error;
    throw corrupt(filePath, position, `the record does not decode: ${error.message}`);
  }
}

function recordFromJson(json: Json): JournalRecord {
  const object = expectObject(json, 'record');
  const revision = expectRevision(object['revision'], 'revision');
  if (revision < 1n) throw new PayloadFormatError('store revisions start at 1');
  if (object['type'] === 'snapshot') {
    const keyValues = expectArray(object['keyValues'], 'keyValues').map(keyValueFromJson);
    if (keyValues.some((keyValue) => keyValue.modRevision > revision)) {
      throw new PayloadFormatError('a snapshot key is newer than the snapshot');
    }
    if (new Set(keyValues.map((keyValue) => keyValue.key)).size !== keyValues.length) {
      throw new PayloadFormatError('a snapshot lists a key twice');
    }
    return { type: 'snapshot', revision, keyValues };
  }
  if (object['type'] === 'change') {
    const writes = expectArray(object['writes'], 'writes').map((entry): KeyWrite => {
      const write = expectObject(entry, 'write');
      if (typeof write['delete'] === 'string') return { kind: 'delete', key: write['delete'] };
      return { kind: 'put', keyValue: keyValueFromJson(write['put'] ?? null) };
    });
    if (writes.length === 0) throw new PayloadFormatError('a change without writes');
    for (const write of writes) {
      if (write.kind === 'put' && write.keyValue.modRevision !== revision) {
        throw new PayloadFormatError(`key "${write.keyValue.key}" is not at the change's revision`);
      }
    }
    return { type: 'change', revision, writes };
  }
  throw new PayloadFormatError(`unknown record type ${JSON.stringify(object['type'])}`);
}

function keyValueFromJson(json: Json): KeyValue {
  const object = expectObject(json, 'keyValue');
  const key = object['key'];
  const value = object['value'];
  if (typeof key !== 'string') throw new PayloadFormatError('keyValue.key is not a string');
  if (typeof value !== 'string') throw new PayloadFormatError('keyValue.value is not a string');
  const keyValue: KeyValue = {
    key,
    value: Buffer.from(value, 'base64'),
    createRevision: expectRevision(object['createRevision'], 'createRevision'),
    modRevision: expectRevision(object['modRevision'], 'modRevision'),
    version: expectRevision(object['version'], 'version'),
    lease: expectRevision(object['lease'], 'lease'),
  };
  if (
    keyValue.createRevision < 1n ||
    keyValue.createRevision > keyValue.modRevision ||
    keyValue.version < 1n
  ) {
    throw new PayloadFormatError(`key "${key}" has inconsistent revisions`);
  }
  return keyValue;
}

function expectObject(json: Json | undefined, what: string): { [key: string]: Json } {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new PayloadFormatError(`${what} is not an object`);
  }
  return json;
}

function expectArray(json: Json | undefined, what: string): Json[] {
  if (!Array.isArray(json)) throw new PayloadFormatError(`${what} is not an array`);
  return json;
}

function expectRevision(json: Json | undefined, what: string): bigint {
  if (typeof json !== 'string' || !/^\d{1,19}$/.test(json)) {
    throw new PayloadFormatError(`${what} is not a decimal integer string`);
  }
  return BigInt(json);
}

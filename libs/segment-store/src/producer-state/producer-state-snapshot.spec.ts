// Proves producer snapshots round-trip every field, and that a damaged, truncated, renamed or
// unknown-version file is refused with a reason instead of being trusted.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ProducerStateEntry } from './producer-state-manager';
import {
  decodeProducerSnapshot,
  encodeProducerSnapshot,
  listProducerSnapshots,
  producerSnapshotFileName,
  readProducerSnapshot,
  writeProducerSnapshot,
} from './producer-state-snapshot';

const entries: ProducerStateEntry[] = [
  {
    producerId: 42n,
    producerEpoch: 3,
    lastTimestampMs: 1_700_000_000_123,
    batches: [
      { baseSequence: 0, lastSequence: 4, baseOffset: 10n, lastOffset: 14n, timestampMs: 1 },
      {
        baseSequence: 5,
        lastSequence: 0x7fffffff,
        baseOffset: 2n ** 40n,
        lastOffset: 2n ** 40n + 7n,
        timestampMs: 1_700_000_000_123,
      },
    ],
  },
  {
    producerId: 2n ** 62n,
    producerEpoch: 32_767,
    lastTimestampMs: 5,
    batches: [{ baseSequence: 9, lastSequence: 9, baseOffset: 3n, lastOffset: 3n, timestampMs: 5 }],
  },
];

describe('producer state snapshots', () => {
  it('round-trip every field through a file named by its offset', () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'spool-snapshot-'));
    writeProducerSnapshot(directory, 1234n, entries, true);
    writeProducerSnapshot(directory, 99n, [], false);
    expect(listProducerSnapshots(directory)).toEqual([99n, 1234n]);
    expect(producerSnapshotFileName(1234n)).toBe('00000000000000001234.snapshot');
    expect(readProducerSnapshot(directory, 1234n)).toEqual(entries);
    expect(readProducerSnapshot(directory, 99n)).toEqual([]);
  });

  it('refuses damaged, truncated, renamed and unknown-version snapshots', () => {
    const bytes = encodeProducerSnapshot(7n, entries);
    const flipped = Buffer.from(bytes);
    flipped[40] = flipped[40]! ^ 0x01;
    expect(() => decodeProducerSnapshot(flipped, 7n)).toThrow(/CRC mismatch/);
    expect(() => decodeProducerSnapshot(bytes.subarray(0, bytes.length - 3), 7n)).toThrow(/CRC/);
    expect(() => decodeProducerSnapshot(bytes.subarray(0, 10), 7n)).toThrow(/header/);
    expect(() => decodeProducerSnapshot(bytes, 8n)).toThrow(/name says 8/);
    const versioned = Buffer.from(bytes);
    versioned.writeInt16BE(9, 0);
    expect(() => decodeProducerSnapshot(versioned, 7n)).toThrow(/version 9/);
    const directory = mkdtempSync(path.join(tmpdir(), 'spool-snapshot-'));
    writeFileSync(path.join(directory, producerSnapshotFileName(5n)), Buffer.alloc(0));
    expect(() => readProducerSnapshot(directory, 5n)).toThrow(/below the header/);
    expect(readFileSync(path.join(directory, producerSnapshotFileName(5n))).length).toBe(0);
  });
});

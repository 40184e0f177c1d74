// Model-based property test of log compaction: random sequences of produce (keys from a small
// set, some values null: tombstones; uncompressed or gzip batches), roll, clock steps, cleaner
// passes (with offset maps from one batch's keys to plenty, and read steps from one batch up) and
// reopens (clean, or abandoned as in a crash) run against a real log and cleaner (its work in a
// cleaner thread, as on a node) on disk and
// against a map of every record produced. After every step a read from the log start must give:
// offsets strictly ascending, each record exactly as produced at its offset, every key's latest
// value, and every tombstone younger than delete.retention.ms. After a pass whose map covered the
// whole cleanable range, each key has exactly one record (its latest) below that range's end.
import * as fc from 'fast-check';
import * as path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { CompressionType, decodeRecordBatches, encodeRecordBatch } from '@spool/record-batch';
import { Log } from '../log';
import { bytesOf, temporaryDirectory } from '../testing';
import { CleanerCheckpoint } from './cleaner-checkpoint';
import { CleanerThread } from './cleaner-thread';
import { LogCleaner } from './log-cleaner';

const deleteRetentionMs = 10_000;
const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];

type Command =
  | { kind: 'produce'; records: Array<{ key: number; tombstone: boolean }>; gzip: boolean }
  | { kind: 'roll' }
  | { kind: 'tick'; ms: number }
  | { kind: 'clean'; mapKeys: number; chunkBytes: number }
  | { kind: 'reopen'; clean: boolean };

const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('produce' as const),
      records: fc.array(
        fc.record({
          key: fc.integer({ min: 0, max: keys.length - 1 }),
          tombstone: fc.integer({ min: 0, max: 4 }).map((draw) => draw === 0),
        }),
        { minLength: 1, maxLength: 6 },
      ),
      gzip: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.constant({ kind: 'roll' as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('tick' as const),
      ms: fc.integer({ min: 1, max: deleteRetentionMs * 2 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('clean' as const),
      mapKeys: fc.constantFrom(6, 7, 1000),
      chunkBytes: fc.constantFrom(100, 4096, 1 << 20),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('reopen' as const), clean: fc.boolean() }),
  },
);

interface Produced {
  readonly key: string;
  readonly value: string | null;
  readonly timestampMs: number;
}

interface ReadRecord {
  readonly offset: bigint;
  readonly key: string;
  readonly value: string | null;
}

/** Offset-map memory that takes `keyCount` keys (24 bytes and a flag a slot, 0.9 load factor). */
function offsetMapBytesFor(keyCount: number): number {
  return (Math.ceil(keyCount / 0.9) + 1) * 25;
}

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

// Every pass's work in one cleaner thread, as on a node (each cleaner of a run uses it).
const thread = new CleanerThread();
afterAll(() => thread.close());

function readAll(log: Log): ReadRecord[] {
  const read = log.read(log.logStartOffset, 1 << 30);
  try {
    return decodeRecordBatches(bytesOf(read.slices)).flatMap((batch) =>
      batch.records.map((record) => ({
        offset: record.offset,
        key: record.key?.toString() ?? '',
        value: record.value === null ? null : record.value.toString(),
      })),
    );
  } finally {
    read.release();
  }
}

describe('log compaction against a model', () => {
  it('keeps every latest value and young tombstone, in offset order, exactly as produced', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 40 }), async (commands) => {
        const root = temporaryDirectory('spool-cleaner-');
        cleanups.push(root.remove);
        const directory = path.join(root.directory, 'orders-0');
        let nowMs = 1_700_000_000_000;
        const clock = (): number => nowMs;
        const config = {
          cleanupPolicy: ['compact' as const],
          minCleanableDirtyRatio: 0,
          deleteRetentionMs,
          segmentBytes: 600,
          indexIntervalBytes: 100,
        };
        const open = async (): Promise<Log> => (await Log.open(directory, { config, clock })).log;
        let log = await open();
        cleanups.push(() => log.abandon());
        const produced = new Map<bigint, Produced>();
        const latest = new Map<string, bigint>();

        for (const step of commands) {
          switch (step.kind) {
            case 'produce': {
              const records = step.records.map(({ key, tombstone }, index) => ({
                key: Buffer.from(keys[key]!),
                value: tombstone ? null : Buffer.from(`${keys[key]}@${nowMs}#${index}`),
                timestampMs: BigInt(nowMs),
              }));
              const batch = encodeRecordBatch({
                baseOffset: 0n,
                records,
                ...(step.gzip ? { compressionType: CompressionType.Gzip } : {}),
              });
              const appended = log.append(batch, { leaderEpoch: 0, assignOffsets: true });
              records.forEach((record, index) => {
                const offset = appended.baseOffset + BigInt(index);
                const key = record.key.toString();
                produced.set(offset, {
                  key,
                  value: record.value?.toString() ?? null,
                  timestampMs: nowMs,
                });
                latest.set(key, offset);
              });
              break;
            }
            case 'roll':
              log.roll();
              break;
            case 'tick':
              nowMs += step.ms;
              break;
            case 'clean': {
              log.updateHighWatermark(log.logEndOffset);
              const cleaner = new LogCleaner(
                {
                  dedupeBufferSizeBytes: offsetMapBytesFor(step.mapKeys),
                  ioMaxBytesPerSecond: Number.POSITIVE_INFINITY,
                  chunkBytes: step.chunkBytes,
                },
                { clock, compute: thread },
              );
              const checkpoint = CleanerCheckpoint.load(root.directory);
              const result = await cleaner.cleanFilthiest([{ log, checkpoint }]);
              if (result !== undefined && step.mapKeys >= keys.length) {
                // The map held every key: below the cleaned range's end, one record per key.
                const end = result.endOffset;
                const below = readAll(log).filter((record) => record.offset < end);
                const latestBelow = new Map<string, bigint>();
                for (const [offset, record] of produced) {
                  if (offset < end) latestBelow.set(record.key, offset);
                }
                for (const record of below) {
                  expect(record.offset).toBe(latestBelow.get(record.key));
                }
              }
              break;
            }
            case 'reopen':
              if (step.clean) await log.close();
              else log.abandon();
              log = await open();
              break;
          }

          const records = readAll(log);
          const present = new Set<bigint>();
          let previous = -1n;
          for (const record of records) {
            expect(record.offset).toBeGreaterThan(previous);
            previous = record.offset;
            const expected = produced.get(record.offset);
            expect(expected).toBeDefined();
            expect({ key: record.key, value: record.value }).toEqual({
              key: expected!.key,
              value: expected!.value,
            });
            present.add(record.offset);
          }
          for (const offset of latest.values()) {
            const record = produced.get(offset)!;
            if (record.value !== null || record.timestampMs > nowMs - deleteRetentionMs) {
              expect(present.has(offset), `offset ${offset} (${record.key})`).toBe(true);
            }
          }
        }
      }),
      { numRuns: 60 },
    );
  }, 60_000);
});

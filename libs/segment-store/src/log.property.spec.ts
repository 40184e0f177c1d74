// Model-based property test of the partition log: random sequences of append, read, truncate,
// DeleteRecords, roll, retention, full truncation and reopen (clean, or abandoned as in a crash)
// run against a real log on disk and against an in-memory list of batches. After every step the
// log's start and end offsets and everything it returns for a read must match the model; any
// divergence fails with the shrunk command sequence.
import * as fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { Log } from './log';
import type { LogConfig } from './log-config';
import { batchOf, recordsOf, temporaryDirectory } from './testing';

interface ModelBatch {
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  readonly sizeBytes: number;
  readonly values: readonly string[];
}

interface Model {
  batches: ModelBatch[];
  logStartOffset: bigint;
  logEndOffset: bigint;
}

type Command =
  | { kind: 'append'; records: number; valueSizeBytes: number }
  | { kind: 'read'; at: number; maxBytes: number; limitAt: number | undefined }
  | { kind: 'truncate'; at: number }
  | { kind: 'deleteRecords'; at: number }
  | { kind: 'roll' }
  | { kind: 'retention' }
  | { kind: 'truncateFully'; gap: number }
  | { kind: 'reopen'; clean: boolean };

const fraction = fc.double({ min: 0, max: 1, noNaN: true });
const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      records: fc.integer({ min: 1, max: 20 }),
      valueSizeBytes: fc.integer({ min: 0, max: 300 }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('read' as const),
      at: fraction,
      maxBytes: fc.integer({ min: 1, max: 8000 }),
      limitAt: fc.option(fraction, { nil: undefined }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('truncate' as const), at: fraction }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('deleteRecords' as const), at: fraction }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'roll' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'retention' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('truncateFully' as const),
      gap: fc.integer({ min: 0, max: 50 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('reopen' as const), clean: fc.boolean() }),
  },
);

const configArbitrary = fc.record({
  segmentBytes: fc.integer({ min: 7000, max: 20000 }),
  indexIntervalBytes: fc.integer({ min: 0, max: 2000 }),
  retentionBytes: fc.oneof(fc.constant(-1), fc.integer({ min: 8000, max: 60000 })),
});

function offsetAt(model: Model, at: number): bigint {
  const span = model.logEndOffset - model.logStartOffset;
  return model.logStartOffset + BigInt(Math.floor(Number(span) * at));
}

/** Kafka's read over the model: the batch holding the offset, then whole batches within maxBytes. */
function expectedRead(
  model: Model,
  startOffset: bigint,
  maxBytes: number,
  maxOffsetExclusive: bigint,
): string[] {
  const values: string[] = [];
  let total = 0;
  for (const batch of model.batches) {
    if (batch.lastOffset < startOffset) continue;
    if (batch.lastOffset >= maxOffsetExclusive) break;
    if (values.length > 0 && total + batch.sizeBytes > maxBytes) break;
    total += batch.sizeBytes;
    batch.values.forEach((value, index) =>
      values.push(`${batch.baseOffset + BigInt(index)}:${value}`),
    );
  }
  return values;
}

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

describe('Log against a model', () => {
  it('matches the model after every command', async () => {
    await fc.assert(
      fc.asyncProperty(
        configArbitrary,
        fc.array(command, { minLength: 10, maxLength: 60, size: 'large' }),
        async (settings, commands) => {
          const config: Partial<LogConfig> = { ...settings, retentionMs: -1 };
          const temporary = temporaryDirectory('spool-model-');
          let log = (await Log.open(temporary.directory, { config })).log;
          try {
            const model: Model = { batches: [], logStartOffset: 0n, logEndOffset: 0n };
            let label = 0;
            for (const step of commands) {
              switch (step.kind) {
                case 'append': {
                  const bytes = batchOf(step.records, {
                    label: `v${label++}`,
                    valueSizeBytes: step.valueSizeBytes,
                  });
                  const result = log.append(bytes, { leaderEpoch: 0, assignOffsets: true });
                  expect(result.baseOffset).toBe(model.logEndOffset);
                  model.batches.push({
                    baseOffset: result.baseOffset,
                    lastOffset: result.lastOffset,
                    sizeBytes: bytes.length,
                    values: Array.from(
                      { length: step.records },
                      (_, index) => `v${label - 1}-${index}`,
                    ),
                  });
                  model.logEndOffset = result.lastOffset + 1n;
                  break;
                }
                case 'read': {
                  const start = offsetAt(model, step.at);
                  const limit =
                    step.limitAt === undefined
                      ? model.logEndOffset
                      : start +
                        BigInt(Math.floor(Number(model.logEndOffset - start) * step.limitAt));
                  const result = log.read(start, step.maxBytes, { maxOffsetExclusive: limit });
                  const actual = recordsOf(result.slices).map(
                    (record) => `${record.offset}:${record.value.replace(/x+$/, '')}`,
                  );
                  result.release();
                  expect(actual).toEqual(expectedRead(model, start, step.maxBytes, limit));
                  break;
                }
                case 'truncate': {
                  // Every batch holding an offset at or after the target goes, a straddling one whole.
                  const target = offsetAt(model, step.at);
                  log.truncateTo(target);
                  const firstCut = model.batches.find((batch) => batch.lastOffset >= target);
                  if (firstCut !== undefined) {
                    model.batches = model.batches.filter((batch) => batch.lastOffset < target);
                    model.logEndOffset = firstCut.baseOffset;
                  }
                  if (model.logStartOffset > model.logEndOffset)
                    model.logStartOffset = model.logEndOffset;
                  break;
                }
                case 'deleteRecords': {
                  const target = offsetAt(model, step.at);
                  log.deleteRecordsBefore(target);
                  if (target > model.logStartOffset) model.logStartOffset = target;
                  break;
                }
                case 'roll':
                  log.roll();
                  break;
                case 'retention': {
                  log.deleteRetainedSegments();
                  expect(log.logStartOffset).toBeGreaterThanOrEqual(model.logStartOffset);
                  model.logStartOffset = log.logStartOffset;
                  break;
                }
                case 'truncateFully': {
                  const target = model.logEndOffset + BigInt(step.gap);
                  log.truncateFullyAndStartAt(target);
                  model.batches = [];
                  model.logStartOffset = target;
                  model.logEndOffset = target;
                  break;
                }
                case 'reopen': {
                  if (step.clean) await log.close();
                  else log.abandon();
                  const reopened = await Log.open(temporary.directory, { config });
                  expect(reopened.report.bytesTruncated).toBe(0);
                  log = reopened.log;
                  break;
                }
              }
              model.batches = model.batches.filter(
                (batch) => batch.lastOffset >= model.logStartOffset,
              );
              expect(log.logEndOffset).toBe(model.logEndOffset);
              expect(log.logStartOffset).toBe(model.logStartOffset);
              const all = log.read(model.logStartOffset, 1 << 30);
              expect(
                recordsOf(all.slices).map(
                  (record) => `${record.offset}:${record.value.replace(/x+$/, '')}`,
                ),
              ).toEqual(expectedRead(model, model.logStartOffset, 1 << 30, model.logEndOffset));
              all.release();
            }
          } finally {
            log.abandon();
            temporary.remove();
          }
        },
      ),
      { numRuns: Number(process.env['SPOOL_PROPERTY_RUNS'] ?? 100) },
    );
  }, 120_000);
});

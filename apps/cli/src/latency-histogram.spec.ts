// Proves the latency histogram keeps its documented precision: every recorded value is reported
// within 1/1024 of itself across the whole range, percentiles follow the nearest-rank rule on
// known distributions, extremes and the mean are exact, and merging equals recording together.
// Beside it, the bench flags: Kafka-like defaults, -1 as --throughput's value, and a flag of
// another mode refused by name.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { LatencyHistogram } from './latency-histogram';
import { parseBenchArgs } from './bench-options';

describe('LatencyHistogram', () => {
  it('reports any single value within 1/1024 of itself', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffff_ffff }), (micros) => {
        const histogram = new LatencyHistogram();
        histogram.recordMs(micros / 1000);
        const reportedMicros = histogram.percentileMs(50) * 1000;
        expect(Math.abs(reportedMicros - micros)).toBeLessThanOrEqual(micros / 1024 + 1e-6);
      }),
    );
  });

  it('finds percentiles by nearest rank on a uniform distribution', () => {
    const histogram = new LatencyHistogram();
    for (let ms = 1; ms <= 10_000; ms++) histogram.recordMs(ms);
    const summary = histogram.summary();
    expect(summary.count).toBe(10_000);
    expect(summary.avgMs).toBeCloseTo(5000.5, 6);
    expect(summary.maxMs).toBe(10_000);
    for (const [percentile, exactMs] of [
      [50, 5_000],
      [99, 9_900],
      [99.9, 9_990],
    ] as const) {
      expect(Math.abs(histogram.percentileMs(percentile) - exactMs)).toBeLessThanOrEqual(
        exactMs / 1024,
      );
    }
  });

  it('counts weighted records and merges like one histogram', () => {
    const together = new LatencyHistogram();
    const left = new LatencyHistogram();
    const right = new LatencyHistogram();
    left.recordMs(2, 99);
    right.recordMs(500, 1);
    together.recordMs(2, 99);
    together.recordMs(500, 1);
    left.add(right);
    expect(left.summary()).toEqual(together.summary());
    expect(left.percentileMs(99)).toBe(2);
    expect(left.percentileMs(99.9)).toBe(500);
    expect(new LatencyHistogram().summary().p99Ms).toBe(0);
  });
});

describe('parseBenchArgs', () => {
  it('takes the minimal form with Kafka-like defaults', () => {
    const { settings } = parseBenchArgs(
      ['produce', '--topic', 'T', '--records', '10', '--record-size', '100', '--acks', '1'],
      {},
    );
    expect(settings).toMatchObject({
      mode: 'produce',
      topic: 'T',
      records: 10,
      recordSizeBytes: 100,
      acks: 1,
      throughputRecordsPerSec: undefined,
      maxInFlight: 5,
    });
  });

  it('takes -1, the documented unlimited rate, as --throughput -1', () => {
    const { settings } = parseBenchArgs(['produce', '--topic', 'T', '--throughput', '-1'], {});
    expect(settings.throughputRecordsPerSec).toBeUndefined();
    expect(
      parseBenchArgs(['produce', '--topic', 'T', '--throughput', '500'], {}).settings
        .throughputRecordsPerSec,
    ).toBe(500);
  });

  it('refuses a flag of another mode, naming the modes it belongs to', () => {
    expect(() => parseBenchArgs(['consume', '--topic', 'T', '--acks', '1'], {})).toThrow(
      '--acks is a flag of bench produce|e2e only',
    );
    expect(() => parseBenchArgs(['produce', '--topic', 'T', '--warmup-seconds', '1'], {})).toThrow(
      '--warmup-seconds is a flag of bench e2e only',
    );
  });

  it('names the bad flag', () => {
    expect(() => parseBenchArgs(['produce'], {})).toThrow(/--topic is required/);
    expect(() => parseBenchArgs(['fly', '--topic', 'T'], {})).toThrow(/bench mode must be one of/);
    expect(() => parseBenchArgs(['e2e', '--topic', 'T'], {})).toThrow(/needs --throughput/);
    expect(() => parseBenchArgs(['produce', '--topic', 'T', '--throughput', '0'], {})).toThrow(
      /--throughput must be -1/,
    );
    expect(() => parseBenchArgs(['produce', '--topic', 'T', '--group', 'g'], {})).toThrow(
      /--group is a flag of bench consume/,
    );
    expect(() => parseBenchArgs(['produce', '--topic', 'T', '--acks', '2'], {})).toThrow(/--acks/);
  });
});

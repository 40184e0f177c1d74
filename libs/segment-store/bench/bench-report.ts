// Turns the measurements into the numbers the issue asks for, checks the targets, and prints
// them: a table for people, and with --json one last line of JSON for scripts.
import { crc32cImplementation } from '@spool/record-batch';
import type { BatchPool } from './batch-pool';
import type { BenchOptions } from './bench-options';
import {
  bytesPerMegabyte,
  cpuSecondsPerGigabyte,
  megabytesPerSecond,
  type Measurement,
} from './measurement';
import {
  hotSetWindowCount,
  readMaxBytes,
  type ReadLatency,
  type ReadLatencyResult,
} from './read-latency';
import type { PathThroughput, TransferThroughputResult } from './transfer-throughput';
import { sliceBatchCount, type WriteThroughputResult } from './write-throughput';

/**
 * The median of the rounds' append/raw rate ratios must reach this: the log may cost at most
 * 20 % over a raw write.
 */
export const appendRatioTarget = 0.8;
/**
 * The median of the rounds' p99s on the hot set, large log over small, must stay under this: a
 * read's cost must not grow with the log.
 */
export const readLatencyGrowthTarget = 1.5;

export interface BenchInputs {
  readonly options: BenchOptions;
  readonly pool: BatchPool;
  readonly write: WriteThroughputResult;
  readonly read: ReadLatencyResult;
  readonly smallLogSizeBytes: number;
  readonly largeLogSizeBytes: number;
  readonly transfer: TransferThroughputResult;
  readonly totalWallSeconds: number;
}

export interface BenchSummary {
  /** The fastest run of each kind. */
  readonly appendMBps: number;
  readonly rawWriteMBps: number;
  /** The median of the rounds' ratios (append rate / raw rate, each round's own runs). */
  readonly appendToRawWriteRatio: number;
  readonly appendToRawWriteRatioByRound: readonly number[];
  /** appendMBps / rawWriteMBps: the fastest append over the fastest raw write. */
  readonly appendToRawWriteRatioBestOf: number;
  readonly appendRecordsPerSec: number;
  readonly appendCpuSeconds: number;
  readonly rawWriteCpuSeconds: number;
  /** Write and fdatasync together; informational, it depends on the disk more than the code. */
  readonly appendSyncedMBps: number;
  readonly rawWriteSyncedMBps: number;
  /** splitRecordBatchPositions alone over the same bytes: the batch checks every leader append runs. */
  readonly batchValidationMBps: number;
  readonly batchValidationCpuSeconds: number;
  /**
   * rawWrite / (rawWrite + batch validation), by wall time: the best ratio an append that
   * validates its batches could reach if everything else in it cost nothing.
   */
  readonly appendRatioCeilingWithValidation: number;
  readonly crc32cImplementation: string;
  /**
   * The median of the rounds' p99s, per log, reading the hot set (the same bytes of log in both
   * logs); readLatencyGrowth is large / small, and the target.
   */
  readonly readP99Micros: { readonly small: number; readonly large: number };
  readonly readP99MicrosByRound: {
    readonly small: readonly number[];
    readonly large: readonly number[];
  };
  readonly readLatencyGrowth: number;
  /** The same for two header preads on the logs' files, without the log code. */
  readonly preadFloorP99MicrosSmall: number;
  readonly preadFloorP99MicrosLarge: number;
  readonly preadFloorLatencyGrowth: number;
  /** How the read offsets are chosen, in words. */
  readonly readOffsets: string;
  readonly readHotSetBytes: number;
  /** The same rounds on uniformly random offsets of each whole log: not the target. */
  readonly readP99MicrosWholeLog: { readonly small: number; readonly large: number };
  readonly readLatencyGrowthWholeLog: number;
  readonly preadFloorLatencyGrowthWholeLog: number;
  /** The single-pass measurement: all its reads pooled, one p50 and p99 per log. */
  readonly readP50MicrosSmallSinglePass: number;
  readonly readP99MicrosSmallSinglePass: number;
  readonly readP50MicrosLargeSinglePass: number;
  readonly readP99MicrosLargeSinglePass: number;
  readonly readLatencyGrowthSinglePass: number;
  readonly preadFloorP99MicrosSmallSinglePass: number;
  readonly preadFloorP99MicrosLargeSinglePass: number;
  readonly preadFloorLatencyGrowthSinglePass: number;
  readonly sendfileAvailable: boolean;
  readonly sendfileMBps: number | null;
  readonly copyMBps: number;
  readonly sendfileCpuSeconds: number | null;
  readonly copyCpuSeconds: number;
  readonly sendfileCpuSecondsPerGB: number | null;
  readonly copyCpuSecondsPerGB: number;
  readonly appendRatioTargetMet: boolean;
  readonly readGrowthTargetMet: boolean;
  readonly sendfileCpuTargetMet: boolean;
  readonly units: string;
  readonly config: {
    readonly quick: boolean;
    readonly batchSizeBytes: number;
    readonly recordsPerBatch: number;
    readonly writeSizeBytes: number;
    readonly smallLogSizeBytes: number;
    readonly largeLogSizeBytes: number;
    readonly readsPerLog: number;
    readonly readRounds: number;
    readonly readsPerLogInRounds: number;
    readonly writeRounds: number;
    readonly readMaxBytes: number;
    readonly transferSizeBytesPerPath: number;
    readonly fsync: string;
    readonly writeMethod: string;
  };
  readonly totalWallSeconds: number;
}

const fsyncTreatment =
  'the write rows fsync nothing; the synced rows add the fdatasync that follows each run ' +
  '(log.flush for the log), timed apart';
const writeTreatment =
  'each round writes both files side by side in alternating slices of ' +
  `${sliceBatchCount} batches, the order swapped every slice; a kind's time is the sum of its slices`;

export function summarize(inputs: BenchInputs): BenchSummary {
  const { write, read, transfer } = inputs;
  const appendMBps = megabytesPerSecond(write.sizeBytes, write.append.write.wallSeconds);
  const rawWriteMBps = megabytesPerSecond(write.sizeBytes, write.rawWrite.write.wallSeconds);
  const { rounds } = read;
  const readLatencyGrowth = rounds.large.p99MicrosMedian / rounds.small.p99MicrosMedian;
  const appendToRawWriteRatio = write.appendToRawWriteRatioMedian;
  const copyCpuSecondsPerGB = cpuPerGigabyte(transfer.copy);
  const sendfileCpuSecondsPerGB =
    transfer.sendfile === undefined ? null : cpuPerGigabyte(transfer.sendfile);
  return {
    appendMBps,
    rawWriteMBps,
    appendToRawWriteRatio,
    appendToRawWriteRatioByRound: write.appendToRawWriteRatios,
    appendToRawWriteRatioBestOf: appendMBps / rawWriteMBps,
    appendRecordsPerSec: write.recordCount / write.append.write.wallSeconds,
    appendCpuSeconds: write.append.write.cpuSeconds,
    rawWriteCpuSeconds: write.rawWrite.write.cpuSeconds,
    appendSyncedMBps: megabytesPerSecond(write.sizeBytes, write.appendSynced.wallSeconds),
    rawWriteSyncedMBps: megabytesPerSecond(write.sizeBytes, write.rawWriteSynced.wallSeconds),
    batchValidationMBps: megabytesPerSecond(write.sizeBytes, write.validation.wallSeconds),
    batchValidationCpuSeconds: write.validation.cpuSeconds,
    appendRatioCeilingWithValidation:
      write.rawWrite.write.wallSeconds /
      (write.rawWrite.write.wallSeconds + write.validation.wallSeconds),
    crc32cImplementation,
    readP99Micros: { small: rounds.small.p99MicrosMedian, large: rounds.large.p99MicrosMedian },
    readP99MicrosByRound: {
      small: rounds.small.p99MicrosByRound,
      large: rounds.large.p99MicrosByRound,
    },
    readLatencyGrowth,
    preadFloorP99MicrosSmall: rounds.floorSmall.p99MicrosMedian,
    preadFloorP99MicrosLarge: rounds.floorLarge.p99MicrosMedian,
    preadFloorLatencyGrowth: rounds.floorLarge.p99MicrosMedian / rounds.floorSmall.p99MicrosMedian,
    readOffsets: readOffsetsTreatment(read.hotSetBytes),
    readHotSetBytes: read.hotSetBytes,
    readP99MicrosWholeLog: {
      small: read.roundsWholeLog.small.p99MicrosMedian,
      large: read.roundsWholeLog.large.p99MicrosMedian,
    },
    readLatencyGrowthWholeLog:
      read.roundsWholeLog.large.p99MicrosMedian / read.roundsWholeLog.small.p99MicrosMedian,
    preadFloorLatencyGrowthWholeLog:
      read.roundsWholeLog.floorLarge.p99MicrosMedian /
      read.roundsWholeLog.floorSmall.p99MicrosMedian,
    readP50MicrosSmallSinglePass: read.small.p50Micros,
    readP99MicrosSmallSinglePass: read.small.p99Micros,
    readP50MicrosLargeSinglePass: read.large.p50Micros,
    readP99MicrosLargeSinglePass: read.large.p99Micros,
    readLatencyGrowthSinglePass: read.large.p99Micros / read.small.p99Micros,
    preadFloorP99MicrosSmallSinglePass: read.floorSmall.p99Micros,
    preadFloorP99MicrosLargeSinglePass: read.floorLarge.p99Micros,
    preadFloorLatencyGrowthSinglePass: read.floorLarge.p99Micros / read.floorSmall.p99Micros,
    sendfileAvailable: transfer.sendfile !== undefined,
    sendfileMBps:
      transfer.sendfile === undefined ? null : pathMegabytesPerSecond(transfer.sendfile),
    copyMBps: pathMegabytesPerSecond(transfer.copy),
    sendfileCpuSeconds: transfer.sendfile?.measurement.cpuSeconds ?? null,
    copyCpuSeconds: transfer.copy.measurement.cpuSeconds,
    sendfileCpuSecondsPerGB,
    copyCpuSecondsPerGB,
    appendRatioTargetMet: appendToRawWriteRatio >= appendRatioTarget,
    readGrowthTargetMet: readLatencyGrowth <= readLatencyGrowthTarget,
    sendfileCpuTargetMet:
      sendfileCpuSecondsPerGB !== null && sendfileCpuSecondsPerGB < copyCpuSecondsPerGB,
    units: 'MB = 1e6 bytes, GB = 1e9 bytes, MiB = 2^20 bytes, GiB = 2^30 bytes, micros = µs',
    config: {
      quick: inputs.options.quick,
      batchSizeBytes: inputs.pool.batchSizeBytes,
      recordsPerBatch: inputs.pool.recordsPerBatch,
      writeSizeBytes: write.sizeBytes,
      smallLogSizeBytes: inputs.smallLogSizeBytes,
      largeLogSizeBytes: inputs.largeLogSizeBytes,
      readsPerLog: read.small.readCount,
      readRounds: rounds.small.p99MicrosByRound.length,
      readsPerLogInRounds: rounds.small.readCount,
      writeRounds: write.appendToRawWriteRatios.length,
      readMaxBytes,
      transferSizeBytesPerPath: transfer.copy.sizeBytes,
      fsync: fsyncTreatment,
      writeMethod: writeTreatment,
    },
    totalWallSeconds: inputs.totalWallSeconds,
  };
}

function readOffsetsTreatment(hotSetBytes: number): string {
  return (
    `target: random offsets from the same ${fixed(hotSetBytes / 1024 / 1024, 0)} MiB of each log ` +
    `(${hotSetWindowCount} windows spread evenly over it), so both touch as much memory and page ` +
    `cache; whole log: uniformly random offsets of each log, reported, not the target`
  );
}

function pathMegabytesPerSecond(result: PathThroughput): number {
  return megabytesPerSecond(result.sizeBytes, result.measurement.wallSeconds);
}

function cpuPerGigabyte(result: PathThroughput): number {
  return cpuSecondsPerGigabyte(result.measurement, result.sizeBytes);
}

export function formatTable(inputs: BenchInputs, summary: BenchSummary): string {
  const { write, read, transfer, pool } = inputs;
  const lines: string[] = [];
  lines.push(
    `segment-store benchmark (MB/s = 1e6 bytes/s, GB = 1e9 bytes; sizes in MiB/GiB; ` +
      `CPU = user+system of this process)`,
  );
  lines.push(
    `batches: ${pool.batchSizeBytes} bytes, ${pool.recordsPerBatch} records of 100-byte ` +
      `values, uncompressed; one write call per batch; CRC-32C: ${crc32cImplementation}`,
  );
  lines.push('');
  const writeRounds = summary.config.writeRounds;
  lines.push(
    row(`write (best of ${writeRounds} rounds)`, 'MB/s', 'wall s', 'CPU s', 'CPU s/GB', 'MiB'),
  );
  lines.push(throughputRow('raw fs.writeSync', write.sizeBytes, write.rawWrite.write));
  lines.push(throughputRow('log.append', write.sizeBytes, write.append.write));
  lines.push(
    `  append/raw ratio, median of ${writeRounds} rounds ${fixed(summary.appendToRawWriteRatio, 3)} ` +
      `(target ≥ ${appendRatioTarget}: ${verdict(summary.appendRatioTargetMet)}); ` +
      `rounds ${summary.appendToRawWriteRatioByRound.map((ratio) => fixed(ratio, 3)).join(' ')}`,
  );
  lines.push(
    `  best of each ${fixed(summary.appendToRawWriteRatioBestOf, 3)}, ` +
      `${Math.round(summary.appendRecordsPerSec).toLocaleString('en-US')} records/s appended`,
  );
  lines.push(`  fsync: ${fsyncTreatment}`);
  lines.push(`  method: ${writeTreatment}`);
  lines.push(throughputRow('batch validation alone', write.sizeBytes, write.validation));
  lines.push(
    `  ratio ceiling for an append that validates: ` +
      `${fixed(summary.appendRatioCeilingWithValidation, 3)} (raw / (raw + validation))`,
  );
  lines.push(throughputRow('raw write + fdatasync', write.sizeBytes, write.rawWriteSynced));
  lines.push(throughputRow('log.append + log.flush', write.sizeBytes, write.appendSynced));
  lines.push('');
  const readRounds = summary.config.readRounds;
  lines.push(
    `read by offset, rounds: median of ${readRounds} rounds' p99 µs, ` +
      `${summary.config.readsPerLogInRounds / readRounds} reads of each kind a round`,
  );
  lines.push(`  offsets: ${summary.readOffsets}`);
  lines.push(
    `  hot set: small log ${fixed(summary.readP99Micros.small, 1)}, large log ` +
      `${fixed(summary.readP99Micros.large, 1)}: growth ${fixed(summary.readLatencyGrowth, 3)} ` +
      `(target ≤ ${readLatencyGrowthTarget}: ${verdict(summary.readGrowthTargetMet)})`,
  );
  lines.push(
    `  floor, 2 preads: small ${fixed(summary.preadFloorP99MicrosSmall, 1)}, large ` +
      `${fixed(summary.preadFloorP99MicrosLarge, 1)}: growth ` +
      `${fixed(summary.preadFloorLatencyGrowth, 3)}`,
  );
  lines.push(
    `  whole log: small ${fixed(summary.readP99MicrosWholeLog.small, 1)}, large ` +
      `${fixed(summary.readP99MicrosWholeLog.large, 1)}: growth ` +
      `${fixed(summary.readLatencyGrowthWholeLog, 3)}; floor growth ` +
      `${fixed(summary.preadFloorLatencyGrowthWholeLog, 3)} (what a larger working set costs)`,
  );
  lines.push('');
  lines.push(
    row(
      `read by offset, whole log, single pass (${readMaxBytes / 1024 / 1024} MiB max)`,
      'p50 µs',
      'p99 µs',
      'max µs',
      'reads',
      'MiB',
    ),
  );
  lines.push(latencyRow('small log', inputs.smallLogSizeBytes, read.small));
  lines.push(latencyRow('large log', inputs.largeLogSizeBytes, read.large));
  lines.push(`  p99 growth large/small ${fixed(summary.readLatencyGrowthSinglePass, 3)}`);
  lines.push(
    latencyRow('floor: 2 preads, small log files', inputs.smallLogSizeBytes, read.floorSmall),
  );
  lines.push(
    latencyRow('floor: 2 preads, large log files', inputs.largeLogSizeBytes, read.floorLarge),
  );
  lines.push(
    `  floor p99 growth ${fixed(summary.preadFloorLatencyGrowthSinglePass, 3)}: what the machine adds ` +
      `for the larger files without any log code`,
  );
  lines.push('');
  lines.push(row('transfer to loopback TCP', 'MB/s', 'wall s', 'CPU s', 'CPU s/GB', 'MiB'));
  if (transfer.sendfile === undefined) {
    lines.push(`${'sendfile'.padEnd(34)}unavailable: ${transfer.unavailableReason ?? ''}`);
  } else {
    lines.push(
      throughputRow('sendfile', transfer.sendfile.sizeBytes, transfer.sendfile.measurement),
    );
  }
  lines.push(
    throughputRow(
      'copy (fs.read + socket.write)',
      transfer.copy.sizeBytes,
      transfer.copy.measurement,
    ),
  );
  lines.push(
    `  sendfile CPU per byte below copy: ${verdict(summary.sendfileCpuTargetMet)}` +
      (summary.sendfileCpuSecondsPerGB === null
        ? ''
        : ` (${fixed(summary.sendfileCpuSecondsPerGB, 3)} vs ${fixed(summary.copyCpuSecondsPerGB, 3)} CPU s/GB)`),
  );
  lines.push('');
  lines.push(`total wall time ${fixed(inputs.totalWallSeconds, 1)} s`);
  return lines.join('\n');
}

function row(...cells: string[]): string {
  const [label, ...rest] = cells;
  return label!.padEnd(34) + rest.map((cell) => cell.padStart(10)).join('');
}

function throughputRow(label: string, sizeBytes: number, measurement: Measurement): string {
  return row(
    label,
    fixed(megabytesPerSecond(sizeBytes, measurement.wallSeconds), 1),
    fixed(measurement.wallSeconds, 3),
    fixed(measurement.cpuSeconds, 3),
    fixed(cpuSecondsPerGigabyte(measurement, sizeBytes), 3),
    fixed(sizeBytes / 1024 / 1024, 0),
  );
}

function latencyRow(label: string, sizeBytes: number, latency: ReadLatency): string {
  return row(
    label,
    fixed(latency.p50Micros, 1),
    fixed(latency.p99Micros, 1),
    fixed(latency.maxMicros, 0),
    String(latency.readCount),
    fixed(sizeBytes / 1024 / 1024, 0),
  );
}

function fixed(value: number, digits: number): string {
  return value.toFixed(digits);
}

function verdict(met: boolean): string {
  return met ? 'met' : 'MISSED';
}

/** Megabytes, for messages that mention a size. */
export function megabytes(sizeBytes: number): string {
  return `${fixed(sizeBytes / bytesPerMegabyte, 1)} MB`;
}

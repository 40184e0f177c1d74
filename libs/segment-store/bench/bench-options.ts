// Command-line options of the segment-store benchmark, validated once, here: a bad value stops
// the run with a message that names the flag and the value.
import { SegmentStoreBenchError } from './bench-error';

export interface BenchOptions {
  /** Print the usage and do nothing else. */
  readonly help: boolean;
  /** Print a last line of JSON after the table. */
  readonly json: boolean;
  /** Small sizes and counts: a smoke run that finishes in seconds. */
  readonly quick: boolean;
  /** Bytes appended by each write-throughput run, raw and through the log (several rounds). */
  readonly writeSizeBytes: number;
  readonly smallLogSizeBytes: number;
  readonly largeLogSizeBytes: number;
  /** Timed reads per log in the read-latency measurement. */
  readonly readCount: number;
  /** Bytes sent over loopback by each transfer path. */
  readonly transferSizeBytes: number;
  /** Where the benchmark makes its own temporary folder; os.tmpdir() when absent. */
  readonly parentDirectory: string | undefined;
}

const mebibyte = 1024 * 1024;
const gibibyte = 1024 * mebibyte;

/** The largest log the flag accepts: the disk must hold it with the other files at once. */
const largeLogGibMax = 32;
/** The smallest log that holds enough batches for random reads to mean anything. */
const logMibMin = 1;
/** The small log must stay small next to the large one; past this the comparison is moot. */
const smallLogMibMax = 4096;

const fullDefaults = {
  writeSizeBytes: 512 * mebibyte,
  smallLogSizeBytes: 100 * mebibyte,
  largeLogSizeBytes: 4 * gibibyte,
  readCount: 20_000,
  transferSizeBytes: 2 * gibibyte,
};

const quickDefaults = {
  writeSizeBytes: 32 * mebibyte,
  smallLogSizeBytes: 8 * mebibyte,
  largeLogSizeBytes: 64 * mebibyte,
  readCount: 2_000,
  transferSizeBytes: 64 * mebibyte,
};

export const benchUsage = `usage: segment-store-bench [--json] [--quick] [--large-log-gib N] [--small-log-mib N] [--dir PATH]
  --json             print a last line of JSON after the table
  --quick            small sizes, for a smoke run of a few seconds
  --large-log-gib N  size of the large log in GiB (default 4, quick 0.0625; at most ${largeLogGibMax})
  --small-log-mib N  size of the small log in MiB (default 100, quick 8; at most ${smallLogMibMax})
  --dir PATH         folder for the benchmark's temporary files (default os.tmpdir())`;

export function parseBenchOptions(argv: readonly string[]): BenchOptions {
  let help = false;
  let json = false;
  let quick = false;
  let largeLogGib: number | undefined;
  let smallLogMib: number | undefined;
  let parentDirectory: string | undefined;
  for (let index = 0; index < argv.length; index++) {
    const [flag, inlineValue] = splitFlag(argv[index]!);
    const value = (): string => {
      if (inlineValue !== undefined) return inlineValue;
      const next = argv[++index];
      if (next === undefined) throw new SegmentStoreBenchError(`${flag} needs a value`);
      return next;
    };
    switch (flag) {
      case '--json':
        json = parseBoolean(flag, inlineValue);
        break;
      case '--quick':
        quick = parseBoolean(flag, inlineValue);
        break;
      case '--large-log-gib':
        largeLogGib = parseNumber(flag, value(), logMibMin / 1024, largeLogGibMax);
        break;
      case '--small-log-mib':
        smallLogMib = parseNumber(flag, value(), logMibMin, smallLogMibMax);
        break;
      case '--dir':
        parentDirectory = value();
        break;
      case '--help':
        help = true;
        break;
      default:
        throw new SegmentStoreBenchError(`unknown option ${argv[index]}\n${benchUsage}`);
    }
  }
  const defaults = quick ? quickDefaults : fullDefaults;
  const smallLogSizeBytes =
    smallLogMib === undefined ? defaults.smallLogSizeBytes : Math.round(smallLogMib * mebibyte);
  const largeLogSizeBytes =
    largeLogGib === undefined ? defaults.largeLogSizeBytes : Math.round(largeLogGib * gibibyte);
  if (largeLogSizeBytes <= smallLogSizeBytes) {
    throw new SegmentStoreBenchError(
      `the large log (${largeLogSizeBytes} bytes) must be larger than the small one ` +
        `(${smallLogSizeBytes} bytes)`,
    );
  }
  return {
    help,
    json,
    quick,
    writeSizeBytes: defaults.writeSizeBytes,
    smallLogSizeBytes,
    largeLogSizeBytes,
    readCount: defaults.readCount,
    transferSizeBytes: defaults.transferSizeBytes,
    parentDirectory,
  };
}

/** `--flag=value` → [flag, value]; `--flag` → [flag, undefined]. */
function splitFlag(argument: string): [string, string | undefined] {
  const equals = argument.indexOf('=');
  return equals < 0
    ? [argument, undefined]
    : [argument.slice(0, equals), argument.slice(equals + 1)];
}

/** nx forwards a bare flag as `--flag=true`, so both spellings are accepted. */
function parseBoolean(flag: string, value: string | undefined): boolean {
  if (value === undefined || value === 'true') return true;
  if (value === 'false') return false;
  throw new SegmentStoreBenchError(`${flag} takes no value or true/false, got "${value}"`);
}

function parseNumber(flag: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value < min || value > max) {
    throw new SegmentStoreBenchError(
      `${flag} must be a number from ${min} to ${max}, got "${text}"`,
    );
  }
  return value;
}

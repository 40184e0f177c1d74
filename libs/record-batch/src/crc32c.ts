import { createRequire } from 'node:module';
import type * as NativeCrc32cModule from '@node-rs/crc32';

/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of RecordBatch v2. Every
 * produced batch is checked once on the leader, so this is on the hot path: the prebuilt native
 * binding of `@node-rs/crc32` (SSE4.2 / ARMv8 CRC instructions) is used when it loads, and a
 * slice-by-8 table implementation in plain JavaScript otherwise (an unsupported platform, or an
 * install without optional dependencies). The choice is made once, at load time, and the
 * binding must reproduce the standard check value before it is trusted.
 *
 * A package with a faster implementation (the segment store's addon: three interleaved crc32
 * chains, or AVX-512 carry-less folding, four to eight times @node-rs/crc32 on 16 KiB batches)
 * installs it at run time with `installCrc32cImplementation`; this package depends on nothing of
 * ours, so it cannot load that addon itself. A candidate is checked before it replaces anything.
 */

/** The built-in implementations; an installed one reports the name it was installed under. */
export type Crc32cImplementation = 'native' | 'javascript';

/** CRC-32C of `data[start, end)` as an unsigned 32-bit integer; never reads outside the range. */
export type Crc32cFunction = (data: Uint8Array, start: number, end: number) => number;

/** What `installCrc32cImplementation` did; a refused candidate comes with the check it failed. */
export type Crc32cInstallResult =
  { readonly installed: true } | { readonly installed: false; readonly reason: string };

/** The reflected form of the Castagnoli polynomial 0x1EDC6F41. */
const castagnoliPolynomialReflected = 0x82f63b78;
/** CRC-32C of the ASCII bytes "123456789": the check value every implementation must give. */
const checkValue = 0xe3069283;

/**
 * Eight 256-entry tables laid end to end: table k maps a byte to its CRC contribution when it
 * is followed by k more bytes, so eight bytes are folded in per step with eight lookups.
 */
const sliceBy8Tables = buildSliceBy8Tables();

function buildSliceBy8Tables(): Int32Array {
  const tables = new Int32Array(8 * 256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 1 ? (crc >>> 1) ^ castagnoliPolynomialReflected : crc >>> 1;
    }
    tables[byte] = crc;
  }
  for (let byte = 0; byte < 256; byte++) {
    let crc = tables[byte];
    for (let table = 1; table < 8; table++) {
      crc = (crc >>> 8) ^ tables[crc & 0xff];
      tables[table * 256 + byte] = crc;
    }
  }
  return tables;
}

/** CRC-32C of `data[start, end)` in plain JavaScript, slice-by-8. */
export function crc32cJavaScript(data: Uint8Array, start = 0, end = data.length): number {
  const tables = sliceBy8Tables;
  let crc = -1;
  let position = start;
  const sliceEnd = start + ((end - start) & ~7);
  while (position < sliceEnd) {
    const low =
      crc ^
      (data[position] |
        (data[position + 1] << 8) |
        (data[position + 2] << 16) |
        (data[position + 3] << 24));
    crc =
      tables[1792 + (low & 0xff)] ^
      tables[1536 + ((low >>> 8) & 0xff)] ^
      tables[1280 + ((low >>> 16) & 0xff)] ^
      tables[1024 + (low >>> 24)] ^
      tables[768 + data[position + 4]] ^
      tables[512 + data[position + 5]] ^
      tables[256 + data[position + 6]] ^
      tables[data[position + 7]];
    position += 8;
  }
  while (position < end) {
    crc = tables[(crc ^ data[position]) & 0xff] ^ (crc >>> 8);
    position += 1;
  }
  return ~crc >>> 0;
}

/**
 * Picks the implementation: the native binding if `loadNative` returns one that computes the
 * check value, the JavaScript tables otherwise. Exported so tests can exercise the fallback.
 */
export function selectCrc32cImplementation(loadNative: () => unknown): {
  implementation: Crc32cImplementation;
  crc32c: Crc32cFunction;
} {
  const javascript = { implementation: 'javascript' as const, crc32c: crc32cJavaScript };
  let native: Partial<typeof NativeCrc32cModule>;
  try {
    native = loadNative() as Partial<typeof NativeCrc32cModule>;
  } catch {
    return javascript;
  }
  const nativeCrc32c = native?.crc32c;
  if (typeof nativeCrc32c !== 'function') return javascript;
  const crc32c: Crc32cFunction = (data, start, end) =>
    nativeCrc32c(start === 0 && end === data.length ? data : data.subarray(start, end)) >>> 0;
  try {
    const check = Buffer.from('123456789', 'latin1');
    if (crc32c(check, 0, check.length) !== checkValue) return javascript;
  } catch {
    return javascript;
  }
  return { implementation: 'native', crc32c };
}

const requireOptional = createRequire(__filename);
const selected = selectCrc32cImplementation(() => requireOptional('@node-rs/crc32'));
let activeCrc32c: Crc32cFunction = selected.crc32c;

/**
 * Which implementation this process uses: `native` (@node-rs/crc32), `javascript`, or the name
 * given to the last accepted `installCrc32cImplementation`. Reported in start-up logs and
 * benchmarks.
 */
export let crc32cImplementation: string = selected.implementation;

/** CRC-32C of `data[start, end)`, as an unsigned 32-bit integer (Kafka's Crc32C.compute). */
export function crc32c(data: Uint8Array, start = 0, end = data.length): number {
  return activeCrc32c(data, start, end);
}

/**
 * Makes `crc32c` use `candidate` from now on, process-wide, and `crc32cImplementation` report
 * `name`, if the candidate passes the checks of `checkCrc32cCandidate` below. Otherwise nothing
 * changes and the result says why, for the caller to log. Call it at start-up, before batches
 * are checked, from the package that owns the faster code (the segment store, when its addon
 * loads).
 */
export function installCrc32cImplementation(
  name: string,
  candidate: Crc32cFunction,
): Crc32cInstallResult {
  if (name.length === 0) return { installed: false, reason: 'the name is empty' };
  const problem = checkCrc32cCandidate(candidate);
  if (problem !== undefined) return { installed: false, reason: problem };
  activeCrc32c = candidate;
  crc32cImplementation = name;
  return { installed: true };
}

/** The published check values (RFC 3720 B.4, Kafka's Crc32CTest) a candidate must reproduce. */
const checkVectors: ReadonlyArray<readonly [string, Buffer, number]> = [
  ['"123456789"', Buffer.from('123456789', 'latin1'), checkValue],
  ['32 bytes of zeros', Buffer.alloc(32, 0x00), 0x8a9136aa],
  ['32 bytes of 0xFF', Buffer.alloc(32, 0xff), 0x62a8ab43],
  [
    'bytes 0..31 ascending',
    Buffer.from(Array.from({ length: 32 }, (_, index) => index)),
    0x46dd794e,
  ],
  ['no bytes', Buffer.alloc(0), 0],
];

/**
 * Lengths on both sides of the boundaries that word-at-a-time, interleaved and folding
 * implementations have (8-byte words, blocks of 64 bytes to 2 KiB, 256-byte folds), up to a
 * 16 KiB batch and past it.
 */
const agreementLengths = [
  1, 7, 8, 9, 63, 191, 192, 200, 511, 512, 1_000, 6_144, 6_200, 16_340, 40_000,
];
/** Start positions inside the sample, so that no candidate can assume alignment. */
const agreementStarts = [0, 1, 3, 5, 8];

/**
 * What is wrong with a candidate implementation, or undefined when it passes: the check vectors,
 * whole and as a sub-range of a larger buffer, then agreement with the JavaScript tables on
 * pseudo-random bytes at the lengths and starts above: under a millisecond of JavaScript CRC.
 */
function checkCrc32cCandidate(candidate: Crc32cFunction): string | undefined {
  try {
    for (const [vectorName, bytes, expected] of checkVectors) {
      const framed = Buffer.concat([Buffer.from([0xa5, 0x5a, 0xff]), bytes, Buffer.from([0x42])]);
      const whole = candidate(bytes, 0, bytes.length);
      const inside = candidate(framed, 3, 3 + bytes.length);
      if (whole !== expected || inside !== expected) {
        return (
          `it gives ${hex(whole)} (whole) and ${hex(inside)} (sub-range) for ${vectorName}, ` +
          `not ${hex(expected)}`
        );
      }
    }
    const sample = pseudoRandomBytes(agreementLengths.at(-1)! + agreementStarts.at(-1)!);
    for (const length of agreementLengths) {
      for (const start of agreementStarts) {
        const expected = crc32cJavaScript(sample, start, start + length);
        const actual = candidate(sample, start, start + length);
        if (actual !== expected) {
          return (
            `it gives ${hex(actual)} for ${length} pseudo-random bytes at position ${start}, ` +
            `where the JavaScript tables give ${hex(expected)}`
          );
        }
      }
    }
  } catch (error) {
    return `it threw: ${error instanceof Error ? error.message : String(error)}`;
  }
  return undefined;
}

/** Deterministic bytes (xorshift32), so a failed check names the same input on every run. */
function pseudoRandomBytes(length: number): Buffer {
  const bytes = Buffer.allocUnsafe(length);
  let state = 0x2545f491;
  for (let index = 0; index < length; index++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    bytes[index] = state & 0xff;
  }
  return bytes;
}

/** An unsigned 32-bit value as 0x and 8 hex digits; anything else (a signed value) as it is. */
function hex(value: unknown): string {
  const isUint32 =
    Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 0xffffffff;
  return isUint32 ? `0x${(value as number).toString(16).padStart(8, '0')}` : String(value);
}

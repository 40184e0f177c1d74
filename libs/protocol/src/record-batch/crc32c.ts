import { createRequire } from 'node:module';
import type * as NativeCrc32cModule from '@node-rs/crc32';

/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of RecordBatch v2. Every
 * produced batch is checked once on the leader, so this is on the hot path: the prebuilt native
 * binding of `@node-rs/crc32` (SSE4.2 / ARMv8 CRC instructions) is used when it loads, and a
 * slice-by-8 table implementation in plain JavaScript otherwise (an unsupported platform, or an
 * install without optional dependencies). The choice is made once, at load time, and the
 * binding must reproduce the standard check value before it is trusted.
 */

export type Crc32cImplementation = 'native' | 'javascript';

type Crc32cFunction = (data: Uint8Array, start: number, end: number) => number;

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

/** Which implementation this process uses; reported in start-up logs and benchmarks. */
export const crc32cImplementation: Crc32cImplementation = selected.implementation;

/** CRC-32C of `data[start, end)`, as an unsigned 32-bit integer (Kafka's Crc32C.compute). */
export function crc32c(data: Uint8Array, start = 0, end = data.length): number {
  return selected.crc32c(data, start, end);
}

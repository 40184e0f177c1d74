// Proves CRC-32C is right whichever implementation runs: the standard check value and Kafka's
// Crc32CTest (iSCSI, RFC 3720) vectors for the active and the JavaScript implementation, agreement
// of native and JavaScript on random buffers and sub-ranges, and the fallback to JavaScript when
// the native binding is missing, malformed or wrong.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  crc32c,
  crc32cImplementation,
  crc32cJavaScript,
  selectCrc32cImplementation,
} from './crc32c';

const ascending = Buffer.from(Array.from({ length: 32 }, (_, index) => index));
const vectors: [string, Buffer, number][] = [
  ['"123456789"', Buffer.from('123456789', 'latin1'), 0xe3069283],
  ['32 bytes of zeros', Buffer.alloc(32, 0x00), 0x8a9136aa],
  ['32 bytes of 0xFF', Buffer.alloc(32, 0xff), 0x62a8ab43],
  ['bytes 0..31 ascending', ascending, 0x46dd794e],
  ['bytes 31..0 descending', Buffer.from(ascending).reverse(), 0x113fdb5c],
  ['no bytes', Buffer.alloc(0), 0x00000000],
];

describe('crc32c', () => {
  it.each(vectors)('gives the published value for %s', (_name, data, expected) => {
    expect(crc32c(data)).toBe(expected);
    expect(crc32cJavaScript(data)).toBe(expected);
  });

  it('computes over a sub-range without copying it first', () => {
    const framed = Buffer.concat([
      Buffer.from([1, 2, 3]),
      Buffer.from('123456789'),
      Buffer.from([4]),
    ]);
    expect(crc32c(framed, 3, 12)).toBe(0xe3069283);
    expect(crc32cJavaScript(framed, 3, 12)).toBe(0xe3069283);
  });

  it('uses the native binding on the platforms @node-rs/crc32 ships binaries for', () => {
    const isShippedPlatform =
      ['linux', 'darwin', 'win32'].includes(process.platform) &&
      ['x64', 'arm64'].includes(process.arch);
    if (isShippedPlatform) expect(crc32cImplementation).toBe('native');
    expect(['native', 'javascript']).toContain(crc32cImplementation);
  });

  it('agrees with the JavaScript implementation on random buffers and ranges', () => {
    // size 'max': without it fast-check keeps arrays to about ten bytes, whatever maxLength says.
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 0, maxLength: 20_000, size: 'max' }),
        fc.nat(),
        fc.nat(),
        (bytes, startSeed, endSeed) => {
          const data = Buffer.from(bytes);
          const start = data.length === 0 ? 0 : startSeed % data.length;
          const end = start + (endSeed % (data.length - start + 1));
          expect(crc32c(data, start, end)).toBe(crc32cJavaScript(data, start, end));
          expect(crc32c(data)).toBe(crc32cJavaScript(data));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('selectCrc32cImplementation', () => {
  it('takes a binding that computes the check value', () => {
    const selected = selectCrc32cImplementation(() => ({
      crc32c: (data: Uint8Array) => crc32cJavaScript(data),
    }));
    expect(selected.implementation).toBe('native');
    expect(selected.crc32c(Buffer.from('x123456789'), 1, 10)).toBe(0xe3069283);
  });

  it.each([
    [
      'the binding fails to load',
      () => {
        throw new Error('Cannot find module');
      },
    ],
    ['the module has no crc32c', () => ({ crc32: () => 0 })],
    ['the module is null', () => null],
    ['crc32c gives a wrong check value', () => ({ crc32c: () => 0x12345678 })],
    [
      'crc32c throws',
      () => ({
        crc32c: () => {
          throw new Error('illegal instruction');
        },
      }),
    ],
  ])('falls back to JavaScript when %s', (_name, load) => {
    const selected = selectCrc32cImplementation(load);
    expect(selected.implementation).toBe('javascript');
    expect(selected.crc32c(Buffer.from('123456789'), 0, 9)).toBe(0xe3069283);
  });
});

// Proves the addon's CRC-32C right on every path this CPU can run (not only the one it picks):
// the published check values, agreement with @spool/record-batch's JavaScript tables on random bytes
// at random positions and lengths (fast-check), continuation through `initial`, and argument
// checks. Then that installAddonCrc32c keeps record-batch's implementation when there is no addon,
// when the addon has only its portable path, or when protocol refuses it, and installs it
// otherwise. Skipped where the addon is not built; install cases with a stand-in binding still run.
import fc from 'fast-check';
import { crc32c, crc32cImplementation, crc32cJavaScript } from '@spool/record-batch';
import { describe, expect, it } from 'vitest';
import {
  installAddonCrc32c,
  loadCrc32cBinding,
  portableAddonImplementation,
  type Crc32cBinding,
} from './native-crc32c';

const load = loadCrc32cBinding();
const binding = load.binding;
const paths = Object.entries(binding?.crc32cByImplementation ?? {});

const ascending = Buffer.from(Array.from({ length: 32 }, (_, index) => index));
const checkValues: Array<[string, Buffer, number]> = [
  ['"123456789"', Buffer.from('123456789', 'latin1'), 0xe3069283],
  ['32 bytes of zeros', Buffer.alloc(32, 0x00), 0x8a9136aa],
  ['32 bytes of 0xFF', Buffer.alloc(32, 0xff), 0x62a8ab43],
  ['bytes 0..31 ascending', ascending, 0x46dd794e],
  ['no bytes', Buffer.alloc(0), 0],
];

/**
 * Byte arrays of any length up to `lengthMax`, half of them under 1,000 bytes, where the block
 * and alignment boundaries of the paths are. `size: 'max'`: fast-check otherwise keeps arrays
 * to about ten bytes, whatever maxLength says.
 */
const randomBytes = (lengthMax: number): fc.Arbitrary<Uint8Array> =>
  fc.oneof(
    fc.uint8Array({ maxLength: 1_000, size: 'max' }),
    fc.uint8Array({ maxLength: lengthMax, size: 'max' }),
  );

/** The reference every path is held to: record-batch's slice-by-8 tables in plain JavaScript. */
const reference = crc32cJavaScript;

describe.skipIf(binding === undefined)('the addon crc32c', () => {
  it('offers the portable path and names the one it runs among those it offers', () => {
    expect(paths.map(([name]) => name)).toContain(portableAddonImplementation);
    expect(binding!.crc32cByImplementation[binding!.crc32cImplementation]).toBeDefined();
    if (process.arch === 'x64') expect(binding!.crc32cImplementation).not.toBe('portable');
  });

  describe.each(paths)('path %s', (_name, compute) => {
    it.each(checkValues)('gives the published value for %s', (_vector, data, expected) => {
      expect(compute(data, 0, data.length)).toBe(expected);
      const framed = Buffer.concat([Buffer.from([1, 2, 3]), data, Buffer.from([4])]);
      expect(compute(framed, 3, 3 + data.length)).toBe(expected);
    });

    it('agrees with the JavaScript tables on random bytes, positions and lengths', () => {
      fc.assert(
        fc.property(randomBytes(40_000), fc.nat(), fc.nat(), (bytes, startSeed, endSeed) => {
          const data = Buffer.from(bytes);
          const start = data.length === 0 ? 0 : startSeed % data.length;
          const end = start + (endSeed % (data.length - start + 1));
          expect(compute(data, start, end)).toBe(reference(data, start, end));
        }),
        { numRuns: 300 },
      );
    });

    it('continues a computation from `initial`', () => {
      fc.assert(
        fc.property(randomBytes(20_000), fc.nat(), (bytes, splitSeed) => {
          const data = Buffer.from(bytes);
          const split = splitSeed % (data.length + 1);
          const head = compute(data, 0, split);
          expect(compute(data, split, data.length, head)).toBe(compute(data, 0, data.length));
        }),
        { numRuns: 100 },
      );
    });
  });

  it('refuses bad arguments instead of reading outside the array', () => {
    const compute = binding!.crc32c;
    const data = Buffer.alloc(8);
    expect(() => compute(data, 0, 9)).toThrow(RangeError);
    expect(() => compute(data, 5, 4)).toThrow(RangeError);
    expect(() => compute(data, -1, 4)).toThrow(RangeError);
    expect(() => compute(data, 0.5, 4)).toThrow(TypeError);
    expect(() => compute(data, 0, 4, 2 ** 32)).toThrow(RangeError);
    expect(() => compute(new Uint16Array(4) as unknown as Uint8Array, 0, 4)).toThrow(TypeError);
    expect(() => compute('bytes' as unknown as Uint8Array, 0, 4)).toThrow(TypeError);
    expect(compute(data, 3, 3, 0x1234)).toBe(0x1234);
    expect(compute(new Uint8Array(0), 0, 0)).toBe(0);
  });
});

describe('installAddonCrc32c', () => {
  const builtIn = crc32cImplementation;
  const standIn = (overrides: Partial<Crc32cBinding>): Crc32cBinding => ({
    crc32c: reference,
    crc32cImplementation: 'sse4.2-pclmul-3way',
    crc32cByImplementation: {},
    ...overrides,
  });

  it('keeps the implementation of protocol when the addon is missing, and says why', () => {
    const install = installAddonCrc32c({ binding: undefined, reason: 'no addon at /nowhere' });
    expect(install).toEqual({
      installed: false,
      implementation: builtIn,
      reason: 'no addon at /nowhere',
    });
    expect(crc32cImplementation).toBe(builtIn);
  });

  it.runIf(builtIn === 'native')('keeps @node-rs/crc32 over the portable path of the addon', () => {
    const install = installAddonCrc32c({
      binding: standIn({ crc32cImplementation: portableAddonImplementation }),
      addonPath: '/stand-in.node',
    });
    expect(install.installed).toBe(false);
    expect(install.installed === false && install.reason).toMatch(/portable path/);
    expect(crc32cImplementation).toBe(builtIn);
  });

  it('keeps the implementation of protocol when protocol refuses the crc32c of the addon', () => {
    const install = installAddonCrc32c({
      binding: standIn({ crc32c: () => 0 }),
      addonPath: '/stand-in.node',
    });
    expect(install.installed).toBe(false);
    expect(install.installed === false && install.reason).toMatch(/refused .* "123456789"/);
    expect(crc32cImplementation).toBe(builtIn);
  });

  it.skipIf(binding === undefined)('installs the addon, which crc32c then runs', () => {
    const install = installAddonCrc32c(load);
    expect(install).toEqual({
      installed: true,
      implementation: `segment-store addon (${binding!.crc32cImplementation})`,
      addonPath: expect.stringMatching(/segment_store_native\.node$/),
    });
    expect(crc32cImplementation).toBe(install.implementation);
    expect(crc32c(Buffer.from('x123456789'), 1, 10)).toBe(0xe3069283);
  });
});

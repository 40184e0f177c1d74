// Types the CRC-32C part of the native addon (native/crc32c.c; its header explains the design)
// and installs it into @spool/record-batch, whose crc32c every batch check calls. The leader
// checks the CRC of every produced batch before it appends it, and with @node-rs/crc32 (one chain
// of crc32 instructions) that check was the largest cost of an append after the write itself;
// the addon runs three chains at once, or folds with AVX-512 carry-less multiplies where the CPU
// has them: four to eight times as fast on 16 KiB batches.
//
// @spool/record-batch depends on nothing of ours, so it cannot load the addon; the segment store
// hands the function in at load (log.ts), record-batch checks it against the standard vectors
// before accepting it, and one log line says which implementation checks batches and why. A
// missing or broken addon is not an error: record-batch keeps its own implementation.
import { crc32cImplementation, installCrc32cImplementation } from '@spool/record-batch';
import { loadNativeAddon } from './native-addon';

export type Crc32cAddonFunction = (
  data: Uint8Array,
  start: number,
  end: number,
  initial?: number,
) => number;

export interface Crc32cBinding {
  /**
   * CRC-32C of `data[start, end)`, unsigned; `initial` is the CRC of the bytes before `start`
   * (default 0), to continue a computation. Throws TypeError or RangeError on bad arguments.
   */
  readonly crc32c: Crc32cAddonFunction;
  /**
   * The path crc32c runs on this CPU, the fastest it has: `avx512-vpclmulqdq`,
   * `sse4.2-pclmul-3way`, `sse4.2` or `portable`.
   */
  readonly crc32cImplementation: string;
  /** Every path this CPU can run, under the same names: for tests and benchmarks. */
  readonly crc32cByImplementation: Readonly<Record<string, Crc32cAddonFunction>>;
}

export type Crc32cBindingLoad =
  | { readonly binding: Crc32cBinding; readonly addonPath: string }
  | { readonly binding: undefined; readonly reason: string };

/** The addon's path without CPU instructions beyond the baseline: slice-by-8 tables in C. */
export const portableAddonImplementation = 'portable';

export function loadCrc32cBinding(): Crc32cBindingLoad {
  const load = loadNativeAddon();
  if (load.addon === undefined) return { binding: undefined, reason: load.reason };
  if (!isCrc32cBinding(load.addon)) {
    return { binding: undefined, reason: `the addon at ${load.addonPath} has no crc32c` };
  }
  return { binding: load.addon, addonPath: load.addonPath };
}

function isCrc32cBinding(loaded: object): loaded is Crc32cBinding {
  const candidate = loaded as Partial<Record<keyof Crc32cBinding, unknown>>;
  return (
    typeof candidate.crc32c === 'function' &&
    typeof candidate.crc32cImplementation === 'string' &&
    typeof candidate.crc32cByImplementation === 'object' &&
    candidate.crc32cByImplementation !== null
  );
}

export type AddonCrc32cInstall =
  | { readonly installed: true; readonly implementation: string; readonly addonPath: string }
  | { readonly installed: false; readonly implementation: string; readonly reason: string };

/**
 * Installs the addon's crc32c into @spool/record-batch when it is the faster choice:
 *
 *   1. No addon, or one without crc32c: keep record-batch's implementation.
 *   2. The addon runs crc32 instructions on this CPU: install it.
 *   3. Only its portable path: install it over record-batch's JavaScript tables, which it beats by
 *      about half again, but not over @node-rs/crc32, which uses the CPU's CRC instructions.
 *   4. Record-batch refuses a candidate that fails its check vectors: keep record-batch's.
 *
 * `implementation` is what checks batches afterwards, as `crc32cImplementation` reports it.
 */
export function installAddonCrc32c(
  load: Crc32cBindingLoad = loadCrc32cBinding(),
): AddonCrc32cInstall {
  // 1.
  if (load.binding === undefined) {
    return { installed: false, implementation: crc32cImplementation, reason: load.reason };
  }
  const addonImplementation = load.binding.crc32cImplementation;
  // 2. and 3.
  if (
    addonImplementation === portableAddonImplementation &&
    crc32cImplementation !== 'javascript'
  ) {
    return {
      installed: false,
      implementation: crc32cImplementation,
      reason: `this CPU runs only the addon's portable path, slower than ${crc32cImplementation}`,
    };
  }
  const name = `segment-store addon (${addonImplementation})`;
  const result = installCrc32cImplementation(name, load.binding.crc32c);
  // 4.
  if (!result.installed) {
    return {
      installed: false,
      implementation: crc32cImplementation,
      reason: `@spool/record-batch refused the addon's crc32c: ${result.reason}`,
    };
  }
  return { installed: true, implementation: name, addonPath: load.addonPath };
}

/** The one start-up line about batch checksums, like the fetch transfer path's. */
export function logCrc32cInstall(install: AddonCrc32cInstall): void {
  if (install.installed) {
    console.info(
      `[segment-store] batch CRC-32C: ${install.implementation}, from ${install.addonPath}`,
    );
  } else {
    console.warn(
      `[segment-store] batch CRC-32C: ${install.implementation} from @spool/record-batch, because ${install.reason}`,
    );
  }
}

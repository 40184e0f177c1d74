// Loads the segment store's native addon (binding.gyp: native/addon.c, addon-util.c, sendfile.c,
// crc32c.c, writeback.c) once per process. Each part checks and types its own functions (native-sendfile.ts,
// native-crc32c.ts). A missing or broken addon is not an error: every part has a fallback, and
// its owner reports the reason, once.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export type NativeAddonLoad =
  | { readonly addon: object; readonly addonPath: string }
  | { readonly addon: undefined; readonly reason: string };

/** node-gyp's output, under the package root: one level above both src/ and dist/. */
const addonPath = path.join(__dirname, '..', 'build', 'Release', 'segment_store_native.node');

/** The first load's outcome: both parts ask, and Node would not load an addon twice anyway. */
let addonLoad: NativeAddonLoad | undefined;

export function loadNativeAddon(): NativeAddonLoad {
  addonLoad ??= loadOnce();
  return addonLoad;
}

function loadOnce(): NativeAddonLoad {
  if (process.platform !== 'linux') {
    return { addon: undefined, reason: `the addon is Linux-only, this is ${process.platform}` };
  }
  if (!fs.existsSync(addonPath)) {
    return {
      addon: undefined,
      reason: `no addon at ${addonPath} (build it: npm run build:native -w @spool/segment-store)`,
    };
  }
  let loaded: unknown;
  try {
    loaded = createRequire(__filename)(addonPath);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { addon: undefined, reason: `the addon at ${addonPath} failed to load: ${message}` };
  }
  if (typeof loaded !== 'object' || loaded === null) {
    return { addon: undefined, reason: `the addon at ${addonPath} exports no object` };
  }
  return { addon: loaded, addonPath };
}

#!/usr/bin/env -S node --initial-old-space-size=64 --single-threaded-gc --no-allocation-site-pretenuring
// The `spool` command. npm links this file at install time, before anything is built, so it
// only forwards to the compiled CLI and says what to do when that is not there yet. The
// interpreter line carries Spool's V8 flags (src/node-flags.ts says why; a test keeps the two
// the same); env execs node, so in a container node itself is PID 1.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const main = fileURLToPath(new URL('../dist/main.js', import.meta.url));
if (!existsSync(main)) {
  process.stderr.write('spool: the CLI is not built yet; run `npm run build` (or `npm start`) first\n');
  process.exit(2);
}
await import(pathToFileURL(main).href);

#!/usr/bin/env node
// The `spool` command. npm links this file at install time, before anything is built, so it
// only forwards to the compiled CLI and says what to do when that is not there yet.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const main = fileURLToPath(new URL('../dist/main.js', import.meta.url));
if (!existsSync(main)) {
  process.stderr.write('spool: the CLI is not built yet; run `npm run build` (or `npm start`) first\n');
  process.exit(2);
}
await import(pathToFileURL(main).href);

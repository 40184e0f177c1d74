#!/usr/bin/env node
// Process entry point of the `spool` command line.
import { runCli } from './cli';

runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
}).then(
  (exitCode) => {
    process.exitCode = exitCode;
  },
  (error: unknown) => {
    process.stderr.write(`spool: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);

#!/usr/bin/env node
// Process entry point of the `spool` command line.
import { runCli } from './cli';

// grpc-js gives TLS the dialled host as its server name, an IP address too (`--gateway
// 198.51.100.7:9090`), and Node reports that as DEP0123 on every such command. The gateway's
// certificate is still checked against the address; only that warning is dropped.
const printWarnings = process.listeners('warning');
process.removeAllListeners('warning');
process.on('warning', (warning: Error & { code?: string }) => {
  if (warning.code === 'DEP0123') return;
  for (const print of printWarnings) print(warning);
});

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

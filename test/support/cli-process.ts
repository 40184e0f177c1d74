// Runs the built `spool` command line as a child process, the way a user's shell would, and
// collects its exit code and output.
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { workspaceRoot } from './service-process';

export const cliEntryPoint = path.join(workspaceRoot, 'apps/cli/dist/main.js');

export interface CliResult {
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `spool <argv>` with `input` on stdin (closed at once); resolves when the process closes. */
export function runCli(argv: readonly string[], input = ''): Promise<CliResult> {
  const child = spawn(process.execPath, [cliEntryPoint, ...argv], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const result = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (result.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (result.stderr += chunk.toString()));
  child.stdin.end(input);
  return new Promise((resolve) =>
    child.once('close', (exitCode) => resolve({ exitCode, ...result })),
  );
}

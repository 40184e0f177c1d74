import { execFile, execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { workspaceRoot } from './service-process';

/**
 * grpcurl, the command-line gRPC client, built at its pinned version by ensure-grpcurl.sh (cached
 * outside the clone), run against a server on loopback with plaintext HTTP/2.
 */
const run = promisify(execFile);
let grpcurlPath: string | undefined;

/** Builds grpcurl the first time (under a minute), then answers at once. */
export function ensureGrpcurl(): string {
  grpcurlPath ??= execFileSync(
    'bash',
    [path.join(workspaceRoot, 'test/support/ensure-grpcurl.sh')],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      timeout: 300_000,
    },
  ).trim();
  return grpcurlPath;
}

/** grpcurl [flags] ADDRESS [verb] [symbol]: the flags go before the address, the rest after. */
export async function grpcurl(
  address: string,
  flags: readonly string[],
  ...command: string[]
): Promise<string> {
  const { stdout } = await run(ensureGrpcurl(), ['-plaintext', ...flags, address, ...command], {
    timeout: 20_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout;
}

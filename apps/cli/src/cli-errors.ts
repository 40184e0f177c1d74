import { CommonErrorCode, isCodedError } from '@spool/common';

/**
 * How the command line fails. Scripts branch on the exit code and people read one line on
 * stderr, `spool: <CODE>: <message>`; the stack comes only with --verbose.
 *
 * Exit codes:
 *   0  the command did what it was asked
 *   1  the operation failed (a Kafka error such as TOPIC_ALREADY_EXISTS, a send that failed)
 *   2  the command line itself is wrong (a bad flag, a missing argument); the message names it
 *   3  the gateway could not be reached (UNAVAILABLE, connection refused)
 */
export const ExitCode = {
  Ok: 0,
  OperationFailed: 1,
  UsageError: 2,
  GatewayUnreachable: 3,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export const usageErrorCode = 'USAGE';

/** A mistake on the command line: exit code 2, before anything is sent to the gateway. */
export class UsageError extends Error {
  readonly code = usageErrorCode;

  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Node's own errors that mean nothing listens at the gateway's address. */
const unreachableSystemCodes: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENOTFOUND',
]);

export function errorCode(error: unknown): string {
  if (error instanceof UsageError) return error.code;
  if (isCodedError(error)) return error.code;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : CommonErrorCode.Unknown;
}

export function exitCodeFor(error: unknown): ExitCode {
  if (error instanceof UsageError) return ExitCode.UsageError;
  const code = errorCode(error);
  if (code === CommonErrorCode.Unavailable || unreachableSystemCodes.has(code)) {
    return ExitCode.GatewayUnreachable;
  }
  return ExitCode.OperationFailed;
}

/** One line `spool: <CODE>: <message>` (plus the stack with --verbose); returns the exit code. */
export function reportError(
  error: unknown,
  stderr: NodeJS.WritableStream,
  options: { verbose: boolean },
): ExitCode {
  const code = errorCode(error);
  const raw = error instanceof Error ? error.message : String(error);
  // A message spanning lines would break the one-line contract scripts grep for; gRPC's own
  // messages repeat the code and end in an empty "Resolution note".
  const message = raw
    .replace(/\s*\n\s*/g, ' ')
    .replace(/\s*Resolution note:\s*$/, '')
    .replace(new RegExp(`^${code}: `), '')
    .trim();
  stderr.write(`spool: ${code}: ${message}\n`);
  if (options.verbose && error instanceof Error && error.stack !== undefined) {
    stderr.write(`${error.stack}\n`);
  }
  return exitCodeFor(error);
}

/** Runs a command body; any error becomes the one-line report and its exit code. */
export async function runReportingErrors(
  stderr: NodeJS.WritableStream,
  verbose: boolean,
  body: () => Promise<number>,
): Promise<number> {
  try {
    return await body();
  } catch (error) {
    return reportError(error, stderr, { verbose });
  }
}

/**
 * A failed assertion stops the process (TigerBeetle's rule, and this project's): the state it
 * guarded is not what the code believes, and answering the next request from it could corrupt
 * data or tell a client something false. The request handlers' wrappers (GrpcServer, the
 * pipelined streams, the storage node's data port) turn every operating error into a typed
 * answer and call this first, so an assertion failure is never one of those answers.
 */
import { AssertionError as NodeAssertionError } from 'node:assert';
import { AssertionError } from './assert';
import type { Logger } from './logger';

/**
 * The exit status after a failed assertion: EX_SOFTWARE of sysexits.h, "an internal software
 * error", so a supervisor tells it apart from a bad configuration (2) or a failed start (1).
 */
export const assertionFailureExitCode = 70;

/** An assertion of ours (`assert()` of libs/common) or of node:assert. */
export function isAssertionFailure(error: unknown): error is Error {
  return error instanceof AssertionError || error instanceof NodeAssertionError;
}

/**
 * Logs a failed assertion as fatal, with what was being done, and exits; returns (doing nothing)
 * for any other error, which the caller answers as usual.
 */
export function exitOnAssertionFailure(
  error: unknown,
  logger: Logger,
  context: Readonly<Record<string, unknown>>,
): void {
  if (!isAssertionFailure(error)) return;
  // pino's default destination writes synchronously, so the line is out before the exit.
  logger.fatal(
    { err: error, ...context },
    'assertion failed: stopping the process before it acts on state it does not understand',
  );
  process.exit(assertionFailureExitCode);
}

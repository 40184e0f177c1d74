/**
 * Invariants. A failed assertion is a programmer error: it throws, nothing catches it on purpose,
 * and the process crashes rather than go on with state it does not understand (TigerBeetle's
 * rule). One condition per call, so the message names exactly what broke.
 */
export class AssertionError extends Error {
  override readonly name = 'AssertionError';
}

export function assert(condition: unknown, message = 'assertion failed'): asserts condition {
  if (!condition) throw new AssertionError(message);
}

/** Marks a branch the type system proves unreachable; reaching it at run time is a bug. */
export function assertNever(value: never, message = 'unexpected value'): never {
  throw new AssertionError(`${message}: ${String(value)}`);
}

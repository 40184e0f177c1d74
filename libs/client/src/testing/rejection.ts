import { expect } from 'vitest';
import { SpoolError } from '@spool/common';

/** The SpoolError a promise rejects with; fails the test if it resolves or throws anything else. */
export async function rejection(promise: Promise<unknown>): Promise<SpoolError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(SpoolError);
  return error as SpoolError;
}

import { describe, expect, it } from 'vitest';
import { Error as ProtoError } from './index';
describe('x', () => { it('round trips', () => {
  const bytes = ProtoError.encode({ code: 'A', message: 'b', retriable: true }).finish();
  expect(ProtoError.decode(bytes).code).toBe('A');
}); });

// Proves ProtocolError has the shape libs/common maps to gRPC statuses (a string `code`, a
// boolean `retriable`, the standard `cause`) and Kafka's retriable classification of each code.
import { describe, expect, it } from 'vitest';
import { ProtocolError, ProtocolErrorCode } from './errors';

describe('ProtocolError', () => {
  it('carries code, retriable and cause as an Error', () => {
    const cause = new Error('socket hang up');
    const error = new ProtocolError(ProtocolErrorCode.InvalidRequest, 'bad request', { cause });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('ProtocolError');
    expect(error.message).toBe('bad request');
    expect(typeof error.code).toBe('string');
    expect(typeof error.retriable).toBe('boolean');
    expect(error.cause).toBe(cause);
    expect('cause' in new ProtocolError(ProtocolErrorCode.InvalidRequest, 'no cause')).toBe(false);
  });

  it('classifies each code as Kafka does (a corrupt response and network failures retriable)', () => {
    const retriableByCode = Object.fromEntries(
      Object.values(ProtocolErrorCode).map((code) => [code, new ProtocolError(code, '').retriable]),
    );
    expect(retriableByCode).toEqual({
      CORRUPT_MESSAGE: true,
      MESSAGE_TOO_LARGE: false,
      UNSUPPORTED_VERSION: false,
      INVALID_REQUEST: false,
      NETWORK_EXCEPTION: true,
      REQUEST_TIMED_OUT: true,
      IN_FLIGHT_REQUESTS_FULL: true,
    });
  });
});

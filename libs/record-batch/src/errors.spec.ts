// Proves RecordBatchError has the shape libs/common maps to gRPC statuses (a string `code`, a
// boolean `retriable`, the standard `cause`) and Kafka's retriable classification of each code.
import { describe, expect, it } from 'vitest';
import { RecordBatchError, RecordBatchErrorCode } from './errors';

describe('RecordBatchError', () => {
  it('carries code, retriable and cause as an Error', () => {
    const cause = new Error('zlib: incorrect header check');
    const error = new RecordBatchError(RecordBatchErrorCode.InvalidRecord, 'bad records', {
      cause,
    });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('RecordBatchError');
    expect(error.message).toBe('bad records');
    expect(typeof error.code).toBe('string');
    expect(typeof error.retriable).toBe('boolean');
    expect(error.cause).toBe(cause);
    expect('cause' in new RecordBatchError(RecordBatchErrorCode.InvalidRecord, 'no cause')).toBe(
      false,
    );
  });

  it('classifies each code as Kafka does (CorruptRecordException retriable)', () => {
    const retriableByCode = Object.fromEntries(
      Object.values(RecordBatchErrorCode).map((code) => [
        code,
        new RecordBatchError(code, '').retriable,
      ]),
    );
    expect(retriableByCode).toEqual({
      CORRUPT_MESSAGE: true,
      INVALID_RECORD: false,
      MESSAGE_TOO_LARGE: false,
      UNSUPPORTED_VERSION: false,
      UNSUPPORTED_COMPRESSION_TYPE: false,
    });
  });
});

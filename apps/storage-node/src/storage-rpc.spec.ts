// How a partition's failure is answered: typed errors keep their code and retriable flag, a
// file-system error that escaped the segment store's wrapping is a retriable
// KAFKA_STORAGE_ERROR (not a permanent failure the producer gives up on), anything else is
// UNKNOWN_SERVER_ERROR.
import { writeFileSync } from 'node:fs';
import { SpoolError } from '@spool/common';
import { describe, expect, it } from 'vitest';
import { protoError } from './storage-rpc';

describe('protoError', () => {
  it('keeps the code of a typed error', () => {
    expect(protoError(new SpoolError('NOT_ENOUGH_REPLICAS', 'two of three'))).toMatchObject({
      code: 'NOT_ENOUGH_REPLICAS',
      message: 'two of three',
    });
  });

  it('answers a raw file-system error as a retriable storage error', () => {
    let raw: unknown;
    try {
      writeFileSync('/', 'x');
    } catch (error) {
      raw = error;
    }
    expect(protoError(raw)).toMatchObject({
      code: 'KAFKA_STORAGE_ERROR',
      message: expect.stringMatching(/^EISDIR: /),
      retriable: true,
    });
  });

  it('answers anything else as UNKNOWN_SERVER_ERROR', () => {
    expect(protoError('boom')).toEqual({
      code: 'UNKNOWN_SERVER_ERROR',
      message: 'boom',
      retriable: false,
    });
  });
});

// Proves the catalog holds Kafka's errors under Kafka's numbers, names and retriable
// classification (the codes where Spool's services once disagreed among themselves included),
// that every Kafka number appears once, and how a code the catalog does not know is classified.
import { describe, expect, it } from 'vitest';
import {
  errorCatalog,
  errorCodeOfKafkaCode,
  errorDefinitionOf,
  isErrorCode,
  isInvalidMetadata,
  isRetriable,
  type ErrorCode,
} from './error-catalog';

describe('error catalog', () => {
  it.each([
    ['UNKNOWN_SERVER_ERROR', -1, false],
    ['OFFSET_OUT_OF_RANGE', 1, false],
    ['CORRUPT_MESSAGE', 2, true],
    ['UNKNOWN_TOPIC_OR_PARTITION', 3, true],
    ['NOT_LEADER_OR_FOLLOWER', 6, true],
    ['REQUEST_TIMED_OUT', 7, true],
    ['NOT_CONTROLLER', 41, true],
    ['INVALID_REQUEST', 42, false],
    ['KAFKA_STORAGE_ERROR', 56, true],
    ['FENCED_LEADER_EPOCH', 74, true],
    ['STALE_BROKER_EPOCH', 77, false],
    ['INVALID_RECORD', 87, false],
    ['FENCED_MEMBER_EPOCH', 110, false],
    ['STALE_MEMBER_EPOCH', 113, false],
    ['INVALID_REGULAR_EXPRESSION', 128, false],
  ] as const)('holds %s as Kafka does: code %i, retriable %s', (code, kafkaCode, retriable) => {
    expect(errorCatalog[code]).toMatchObject({ kafkaCode, retriable });
    expect(errorCodeOfKafkaCode(kafkaCode)).toBe(code);
  });

  it('gives each Kafka number to one code, and every entry a message', () => {
    const entries = Object.entries(errorCatalog);
    const kafkaCodes = entries.flatMap(([, definition]) =>
      definition.kafkaCode === undefined ? [] : [definition.kafkaCode],
    );
    expect(new Set(kafkaCodes).size).toBe(kafkaCodes.length);
    for (const [code, definition] of entries) {
      expect(code).toMatch(/^[A-Z]+(_[A-Z]+)*$/);
      expect(definition.message.length).toBeGreaterThan(0);
    }
    expect(errorCodeOfKafkaCode(0)).toBeUndefined();
  });

  it("classifies Spool's own codes, which have no Kafka number", () => {
    expect(errorDefinitionOf('UNAVAILABLE')).toMatchObject({
      kafkaCode: undefined,
      retriable: true,
    });
    expect(errorDefinitionOf('METADATA_STORE_CLOSED')?.retriable).toBe(false);
  });

  it('knows only its own codes; an unknown one keeps the flag its sender gave it', () => {
    expect(isErrorCode('NOT_CONTROLLER')).toBe(true);
    expect(isErrorCode('toString')).toBe(false);
    expect(errorDefinitionOf('SOMETHING_ELSE')).toBeUndefined();
    expect(isRetriable('SOMETHING_ELSE')).toBe(false);
    expect(isRetriable('SOMETHING_ELSE', true)).toBe(true);
    expect(isRetriable('INVALID_REQUEST', true)).toBe(false);
    const code: ErrorCode = 'LEADER_NOT_AVAILABLE';
    expect(isRetriable(code)).toBe(true);
  });

  it("names Kafka's InvalidMetadataException family, all retriable", () => {
    const family = Object.keys(errorCatalog).filter(isInvalidMetadata);
    expect(family.sort()).toEqual([
      'FENCED_LEADER_EPOCH',
      'KAFKA_STORAGE_ERROR',
      'LEADER_NOT_AVAILABLE',
      'NETWORK_EXCEPTION',
      'NOT_LEADER_OR_FOLLOWER',
      'UNKNOWN_LEADER_EPOCH',
      'UNKNOWN_TOPIC_OR_PARTITION',
    ]);
    for (const code of family) expect(isRetriable(code)).toBe(true);
    expect(isInvalidMetadata('REQUEST_TIMED_OUT')).toBe(false);
  });
});

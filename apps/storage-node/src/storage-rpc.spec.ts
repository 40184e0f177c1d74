// How a partition's failure is answered: typed errors keep their code and retriable flag, a
// file-system error that escaped the segment store's wrapping is a retriable
// KAFKA_STORAGE_ERROR (not a permanent failure the producer gives up on), anything else is
// UNKNOWN_SERVER_ERROR. And that an Append with an acks Kafka does not define is answered
// INVALID_REQUIRED_ACKS for every partition before any replica is looked up (the gateway
// forwards acks unchecked: this is the one check).
import { writeFileSync } from 'node:fs';
import { RequestMetrics, SpoolError } from '@spool/common';
import type { Acks } from '@spool/protocol';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { DataDirectory } from './data-directory';
import type { ReplicaManager } from './replica/replica-manager';
import { StorageMetrics } from './storage-metrics';
import { protoError, storageHandlers } from './storage-rpc';

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

describe('append', () => {
  it('answers an unknown acks with INVALID_REQUIRED_ACKS for every partition, reaching no replica', async () => {
    const registry = new Registry();
    const metrics = new StorageMetrics(
      registry,
      new RequestMetrics(registry),
      () => undefined,
      {} as DataDirectory,
      false,
    );
    const replicasLookedUp: string[] = [];
    const replicas = (): ReplicaManager => {
      replicasLookedUp.push('replicas');
      throw new Error('no replica may be reached with an invalid acks');
    };
    const handlers = storageHandlers(replicas, () => undefined, metrics, {
      brokerId: 0,
      link: () => undefined,
    });
    const response = await handlers.append({
      partitions: [
        { topic: 'orders', partition: 0, records: Buffer.alloc(70) },
        { topic: 'orders', partition: 1, records: Buffer.alloc(70) },
      ],
      acks: 99 as Acks,
      timeoutMs: 1_000,
    });
    expect(response.results).toEqual(
      [0, 1].map((partition) => ({
        topic: 'orders',
        partition,
        error: {
          code: 'INVALID_REQUIRED_ACKS',
          message: 'acks is 99; it must be ACKS_NONE, ACKS_LEADER or ACKS_ALL',
          retriable: false,
        },
        baseOffset: -1n,
        lastOffset: -1n,
        logAppendTimeMs: -1n,
        logStartOffset: -1n,
      })),
    );
    expect(replicasLookedUp).toEqual([]);
  });
});

/**
 * The gateway's fetch session cache (KIP-227) and its series, by the names of Kafka's
 * FetchSessionCache metrics (NumIncrementalFetchSessions, NumIncrementalFetchPartitionsCached,
 * IncrementalFetchSessionEvictionsPerSec), beside a count of fetches by kind that shows clients
 * really fetch incrementally.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { FetchSessionCache, fetchSessionEvictionMsDefault } from './fetch-session-cache';
import type { FetchKindCounter, KafkaFetchSessionCache } from './kafka-fetch';

export interface KafkaFetchSessions {
  readonly cache: KafkaFetchSessionCache;
  readonly countFetch: FetchKindCounter;
}

export function createKafkaFetchSessions(registry: Registry, slotsMax: number): KafkaFetchSessions {
  const evictions = new Counter({
    name: 'spool_kafka_incremental_fetch_session_evictions_total',
    help: 'Kafka fetch sessions evicted to make room for a new one.',
    registers: [registry],
  });
  const cache: KafkaFetchSessionCache = new FetchSessionCache({
    slotsMax,
    evictionMs: fetchSessionEvictionMsDefault,
    onEviction: () => evictions.inc(),
  });
  new Gauge({
    name: 'spool_kafka_incremental_fetch_sessions',
    help: 'Kafka fetch sessions in the cache.',
    registers: [registry],
    collect() {
      this.set(cache.sessionCount);
    },
  });
  new Gauge({
    name: 'spool_kafka_incremental_fetch_partitions_cached',
    help: 'Partitions held by the fetch sessions in the cache.',
    registers: [registry],
    collect() {
      this.set(cache.partitionsCached);
    },
  });
  const fetches = new Counter({
    name: 'spool_kafka_fetch_requests_total',
    help:
      'Kafka Fetch requests by kind: full (names its partitions), incremental (in a fetch ' +
      'session, names only what changed), session_error (an unknown session or a wrong epoch).',
    labelNames: ['kind'],
    registers: [registry],
  });
  return { cache, countFetch: (kind) => fetches.inc({ kind }) };
}

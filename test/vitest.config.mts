// Cross-process tests: they start real Spool processes from the built output (`npm run build`
// first; `npm test` does), so they run in their own vitest project, one file at a time.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ['spool-source'] },
  ssr: { resolve: { conditions: ['spool-source'], externalConditions: ['spool-source'] } },
  test: {
    include: ['**/*.spec.ts'],
    exclude: [
      'fixtures/**',
      '**/node_modules/**',
      // Left out of `npm test` while the bug it found is open (issue 23): the gateway retries a
      // Kafka client's idempotent batch on the new leader itself after a leader change, so a
      // later pipelined batch can reach the new leader first; it answers
      // OUT_OF_ORDER_SEQUENCE_NUMBER and librdkafka stops with a fatal "sequence
      // desynchronization" (1 run in about 7). Run it with SPOOL_TEST_KNOWN_BUGS=1:
      // SPOOL_TEST_KNOWN_BUGS=1 npx vitest run --config test/vitest.config.mts kafka-leader-failover
      ...(process.env['SPOOL_TEST_KNOWN_BUGS'] === '1'
        ? []
        : ['kafka/kafka-leader-failover.spec.ts']),
    ],
    environment: 'node',
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});

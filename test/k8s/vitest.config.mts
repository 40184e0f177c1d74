// `npm run test:k8s`: the chart on the real single-node cluster of test/k8s (npm run k8s:up).
// Its own project, not part of test/vitest.config.mts (whose glob is *.spec.ts): it needs root,
// a running cluster and the loaded image, and takes minutes. One file, its steps in order.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ['spool-source'] },
  ssr: { resolve: { conditions: ['spool-source'], externalConditions: ['spool-source'] } },
  test: {
    include: ['**/*.k8s.ts'],
    environment: 'node',
    pool: 'forks',
    fileParallelism: false,
    // Each step bounds its own waits; these only stop a hung step.
    testTimeout: 900_000,
    hookTimeout: 300_000,
  },
});

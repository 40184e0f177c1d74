// Cross-process tests: they start real Spool processes from the built output (`npm run build`
// first; `npm test` does), so they run in their own vitest project, one file at a time.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ['spool-source'] },
  ssr: { resolve: { conditions: ['spool-source'], externalConditions: ['spool-source'] } },
  test: {
    include: ['**/*.spec.ts'],
    exclude: ['fixtures/**', '**/node_modules/**'],
    environment: 'node',
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});

// Unit tests of one project: run from the project's folder by its nx `test` target.
// The `spool-source` condition resolves workspace packages to their TypeScript sources, so a
// project's tests never depend on another project having been built.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: process.cwd(),
  resolve: { conditions: ['spool-source'] },
  ssr: { resolve: { conditions: ['spool-source'], externalConditions: ['spool-source'] } },
  test: {
    include: ['src/**/*.spec.ts'],
    environment: 'node',
    pool: 'forks',
    testTimeout: 30_000,
    // expect.poll, for "until this holds": checked every 10 ms for up to 5 s (its defaults, 50 ms
    // and 1 s, are slow to notice and quick to give up on a loaded machine).
    expect: { poll: { timeout: 5_000, interval: 10 } },
  },
});

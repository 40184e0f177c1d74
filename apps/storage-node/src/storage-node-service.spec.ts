// Proves the storage node's start-up contract in-process: with no controller reachable it is
// live and serves metrics (disk free included) but is not ready, saying it waits for metadata;
// a second node on the same data directory is refused before opening anything; it stops cleanly.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startStorageNode } from './storage-node-service';

const dataDir = mkdtempSync(path.join(tmpdir(), 'spool-storage-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const argv = [
  '--grpc-port',
  '0',
  '--metrics-port',
  '0',
  '--data-port',
  '0',
  '--log-level',
  'silent',
  '--broker-id',
  '7',
  '--data-dir',
  dataDir,
  '--controller-addresses',
  '127.0.0.1:1',
];

describe('storage-node service', () => {
  it('is live but not ready without metadata, refuses a second process on its directory, and stops', async () => {
    const service = await startStorageNode({ argv, env: {}, handleSignals: false });
    try {
      expect((await fetch(`http://127.0.0.1:${service.metricsPort}/healthz`)).status).toBe(200);
      const readiness = await fetch(`http://127.0.0.1:${service.metricsPort}/readyz`);
      expect(readiness.status).toBe(503);
      expect(await readiness.text()).toContain('waiting for metadata');
      const metrics = await (await fetch(`http://127.0.0.1:${service.metricsPort}/metrics`)).text();
      expect(metrics).toMatch(/^spool_disk_free_bytes\{service="storage-node"\} \d+/m);
      expect(metrics).toMatch(/^spool_offline_log_directories\{service="storage-node"\} 0$/m);
      await expect(startStorageNode({ argv, env: {}, handleSignals: false })).rejects.toThrow(
        /data directory .* is in use/,
      );
    } finally {
      await service.stop();
    }
    await expect(fetch(`http://127.0.0.1:${service.metricsPort}/healthz`)).rejects.toThrow();
  });
});

// Proves the storage node's start-up contract in-process: with no controller reachable it is
// live and serves metrics (disk free included) but is not ready, saying it waits for metadata;
// a second node on the same data directory is refused before opening anything; it stops cleanly.
// Its identity settings fail loudly: a pod name without an ordinal, a rack set twice, a rack
// label without the node name.
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

  it.each([
    [
      'a pod name without an ordinal',
      ['--broker-id=-1', '--pod-name', 'spool-storage'],
      /broker\.id is not set and the pod name "spool-storage"/,
    ],
    [
      'a rack set and read from a node label',
      ['--rack', 'eu-1a', '--rack-from-node-label', 'topology.kubernetes.io/zone'],
      /settings rack \("eu-1a"\) and rack\.from\.node\.label .* exclude each other/,
    ],
    [
      'a rack label without the node name',
      ['--rack-from-node-label', 'topology.kubernetes.io/zone'],
      /rack\.from\.node\.label needs node\.name \(SPOOL_NODE_NAME/,
    ],
  ])('refuses to start with %s', async (_name, extra, message) => {
    await expect(
      startStorageNode({ argv: [...argv, ...extra], env: {}, handleSignals: false }),
    ).rejects.toThrow(message);
  });
});

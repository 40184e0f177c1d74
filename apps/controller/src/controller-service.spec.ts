// Proves the controller service starts in-process on free ports, reports ready on /readyz, serves
// Prometheus metrics, and stops cleanly when asked.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startController } from './controller-service';

describe('controller service', () => {
  it('starts, is ready, serves metrics and stops', async () => {
    const service = await startController({
      argv: [
        '--grpc-port',
        '0',
        '--metrics-port',
        '0',
        '--log-level',
        'silent',
        '--metadata-path',
        path.join(mkdtempSync(path.join(tmpdir(), 'spool-controller-')), 'metadata.journal'),
      ],
      env: {},
      handleSignals: false,
    });
    try {
      const readiness = await fetch(`http://127.0.0.1:${service.metricsPort}/readyz`);
      expect(readiness.status).toBe(200);
      const metrics = await (await fetch(`http://127.0.0.1:${service.metricsPort}/metrics`)).text();
      expect(metrics).toContain('process_resident_memory_bytes{service="controller"}');
    } finally {
      await service.stop();
    }
    await expect(fetch(`http://127.0.0.1:${service.metricsPort}/healthz`)).rejects.toThrow();
  });
});

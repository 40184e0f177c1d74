// Proves the gateway service starts in-process on free ports, reports ready on /readyz, serves
// Prometheus metrics, and stops cleanly when asked.
import { describe, expect, it } from 'vitest';
import { startGateway } from './gateway-service';

describe('gateway service', () => {
  it('starts, is ready, serves metrics and stops', async () => {
    const service = await startGateway({
      argv: ['--grpc-port', '0', '--metrics-port', '0', '--log-level', 'silent'],
      env: {},
      handleSignals: false,
    });
    try {
      const readiness = await fetch(`http://127.0.0.1:${service.metricsPort}/readyz`);
      expect(readiness.status).toBe(200);
      const metrics = await (await fetch(`http://127.0.0.1:${service.metricsPort}/metrics`)).text();
      expect(metrics).toContain('process_resident_memory_bytes{service="gateway"}');
    } finally {
      await service.stop();
    }
    await expect(fetch(`http://127.0.0.1:${service.metricsPort}/healthz`)).rejects.toThrow();
  });
});

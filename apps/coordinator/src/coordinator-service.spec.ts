// Proves the coordinator service starts in-process on free ports, is alive but not ready until
// it has the cluster metadata (no controller runs here), serves its Prometheus metrics, answers
// group calls with a retriable error instead of guessing, and stops cleanly when asked.
import { callOnce, createGrpcClient } from '@spool/common';
import { CoordinatorServiceClient } from '@spool/protocol';
import { describe, expect, it } from 'vitest';
import { startCoordinator } from './coordinator-service';

describe('coordinator service', () => {
  it('starts, waits for metadata before it is ready, serves metrics and stops', async () => {
    const service = await startCoordinator({
      argv: [
        '--grpc-port',
        '0',
        '--metrics-port',
        '0',
        '--log-level',
        'silent',
        '--controller-addresses',
        '127.0.0.1:1',
      ],
      env: {},
      handleSignals: false,
    });
    const client = createGrpcClient(CoordinatorServiceClient, `127.0.0.1:${service.grpcPort}`);
    try {
      expect((await fetch(`http://127.0.0.1:${service.metricsPort}/healthz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${service.metricsPort}/readyz`)).status).toBe(503);
      const metrics = await (await fetch(`http://127.0.0.1:${service.metricsPort}/metrics`)).text();
      expect(metrics).toContain('process_resident_memory_bytes{service="coordinator"}');
      expect(metrics).toContain('spool_coordinator_shards_owned{service="coordinator"} 0');
      const described = await callOnce(client, client.describeGroup, { groupId: 'g' });
      expect(described.error?.code).toBe('COORDINATOR_NOT_AVAILABLE');
      expect(described.error?.retriable).toBe(true);
    } finally {
      client.close();
      await service.stop();
    }
    await expect(fetch(`http://127.0.0.1:${service.metricsPort}/healthz`)).rejects.toThrow();
  });
});

// Proves AllocateProducerIds hands out disjoint blocks of 1000 ids, also when many calls race
// and after the controller restarts on the same metadata file, by running a real controller
// in-process on free ports and calling it over gRPC.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { callOnce, createGrpcClient, type RunningService } from '@spool/common';
import { ControllerServiceClient } from '@spool/protocol';
import { startController } from './controller-service';
import { producerIdsPerBlock } from './producer-id-blocks';

function start(metadataPath: string): Promise<RunningService> {
  return startController({
    argv: [
      '--grpc-port',
      '0',
      '--metrics-port',
      '0',
      '--log-level',
      'silent',
      '--metadata-path',
      metadataPath,
    ],
    env: {},
    handleSignals: false,
  });
}

async function allocate(service: RunningService, count: number): Promise<bigint[]> {
  const client = createGrpcClient(ControllerServiceClient, `127.0.0.1:${service.grpcPort}`);
  try {
    // The role starts after the port is bound: NOT_CONTROLLER until it has won the election.
    await vi.waitFor(
      () => callOnce(client, client.allocateProducerIds, { coordinatorId: 'probe' }),
      { timeout: 10_000, interval: 50 },
    );
    const responses = await Promise.all(
      Array.from({ length: count }, (_, index) =>
        callOnce(client, client.allocateProducerIds, { coordinatorId: `coordinator-${index}` }),
      ),
    );
    for (const response of responses) expect(response.count).toBe(producerIdsPerBlock);
    return responses.map((response) => response.firstProducerId);
  } finally {
    client.close();
  }
}

describe('AllocateProducerIds', () => {
  it('hands out disjoint blocks, concurrently and across a restart', async () => {
    const metadataPath = path.join(
      mkdtempSync(path.join(tmpdir(), 'spool-producer-ids-')),
      'metadata.journal',
    );
    const first = await start(metadataPath);
    let before: bigint[];
    try {
      before = await allocate(first, 8);
    } finally {
      await first.stop();
    }
    const second = await start(metadataPath);
    let after: bigint[];
    try {
      after = await allocate(second, 4);
    } finally {
      await second.stop();
    }
    const all = [...before, ...after];
    expect(new Set(all.map(String)).size).toBe(all.length);
    for (const firstId of all) expect(firstId % BigInt(producerIdsPerBlock)).toBe(0n);
    // Every block after the restart starts past every block before it.
    const maxBefore = before.reduce((max, value) => (value > max ? value : max), -1n);
    for (const firstId of after) expect(firstId).toBeGreaterThan(maxBefore);
  }, 30_000);

  it('refuses a request without a coordinator id', async () => {
    const metadataPath = path.join(
      mkdtempSync(path.join(tmpdir(), 'spool-producer-ids-')),
      'metadata.journal',
    );
    const service = await start(metadataPath);
    const client = createGrpcClient(ControllerServiceClient, `127.0.0.1:${service.grpcPort}`);
    try {
      await allocate(service, 1);
      await expect(
        callOnce(client, client.allocateProducerIds, { coordinatorId: '' }),
      ).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    } finally {
      client.close();
      await service.stop();
    }
  }, 30_000);
});

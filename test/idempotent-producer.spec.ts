// Proves idempotent production into a partition with real processes: hand-built RecordBatch v2
// batches carrying producer id, epoch and base sequence are appended through
// StorageService.Append. A retried batch gets its original offsets and writes nothing; a gap is
// refused with OUT_OF_ORDER_SEQUENCE_NUMBER, a stale epoch with INVALID_PRODUCER_EPOCH, an
// unknown producer past sequence 0 with UNKNOWN_PRODUCER_ID. After SIGKILL and a restart of
// the node the state is rebuilt from a producer snapshot plus the batch headers after it (the
// node's log says which) and duplicates are still recognised; with three nodes and RF 3 the
// leader's SIGKILL leaves a new leader that recognises them too. Also: AllocateProducerIds
// blocks never repeat across a controller SIGKILL and restart on the same metadata file.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { controllerChannel } from '@spool/cluster-link';
import { callOnce, createGrpcClient } from '@spool/common';
import { ProducerIdManager, controllerProducerIdBlocks } from '@spool/coordinator';
import { ControllerServiceClient, type PartitionAppendResult } from '@spool/protocol';
import { encodeRecordBatch } from '@spool/record-batch';
import { eventually } from './support/controller-client';
import { recordsOnDisk } from './support/replication-support';
import { startServiceProcess } from './support/service-process';
import { StorageTestCluster } from './support/storage-cluster';

let cluster: StorageTestCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

const producerId = 4_000n;

function idempotentBatch(
  producerEpoch: number,
  baseSequence: number,
  recordCount: number,
  id = producerId,
): Buffer {
  return encodeRecordBatch({
    baseOffset: 0n,
    producerId: id,
    producerEpoch,
    baseSequence,
    records: Array.from({ length: recordCount }, (_, index) => ({
      key: null,
      value: Buffer.from(`p${id}-e${producerEpoch}-s${baseSequence + index}`),
      timestampMs: BigInt(Date.now()),
    })),
  });
}

async function append(topic: string, records: Buffer): Promise<PartitionAppendResult> {
  return (await cluster!.append(topic, 0, records)).results[0]!;
}

function expectWritten(result: PartitionAppendResult, baseOffset: bigint, lastOffset: bigint) {
  expect(result.error).toBeUndefined();
  expect({ baseOffset: result.baseOffset, lastOffset: result.lastOffset }).toEqual({
    baseOffset,
    lastOffset,
  });
}

function expectRefused(result: PartitionAppendResult, code: string) {
  expect(result.error?.code, result.error?.message).toBe(code);
  expect(result.error?.retriable).toBe(false);
}

/** The last `replica hosted` record a node logged for the partition. */
function hostedRecord(brokerId: number, topic: string): Record<string, unknown> {
  const lines = cluster!.nodes.get(brokerId)!.process.logLines;
  for (const line of [...lines].reverse()) {
    // The native addon prints plain lines on stdout beside the JSON log.
    if (!line.startsWith('{')) continue;
    const record = JSON.parse(line) as Record<string, unknown>;
    if (record['msg'] === 'replica hosted' && record['partition'] === `${topic}-0`) return record;
  }
  throw new Error(`broker ${brokerId} logged no replica hosted for ${topic}-0`);
}

describe('idempotent producer', () => {
  it('refuses gaps and stale epochs, answers duplicates, and survives a SIGKILL', async () => {
    cluster = await StorageTestCluster.start(1);
    // Small segments: the node rolls often, so a snapshot exists and headers follow it.
    await cluster.createTopic('idem', 1, 1, [{ name: 'segment.bytes', value: '600' }]);

    expectWritten(await append('idem', idempotentBatch(0, 0, 3)), 0n, 2n);
    expectWritten(await append('idem', idempotentBatch(0, 3, 2)), 3n, 4n);
    // A retry of the first batch: the original offsets, nothing written.
    expectWritten(await append('idem', idempotentBatch(0, 0, 3)), 0n, 2n);
    expectRefused(await append('idem', idempotentBatch(0, 9, 1)), 'OUT_OF_ORDER_SEQUENCE_NUMBER');
    expectRefused(await append('idem', idempotentBatch(0, 4, 1, 77n)), 'UNKNOWN_PRODUCER_ID');
    // The producer bumps its epoch: sequences restart at 0, and the old epoch is fenced.
    expectWritten(await append('idem', idempotentBatch(1, 0, 1)), 5n, 5n);
    expectRefused(await append('idem', idempotentBatch(0, 5, 1)), 'INVALID_PRODUCER_EPOCH');
    for (let sequence = 1; sequence < 15; sequence++) {
      const offset = 5n + BigInt(sequence);
      expectWritten(await append('idem', idempotentBatch(1, sequence, 1)), offset, offset);
    }
    const values = recordsOnDisk(cluster.dataDirOf(0), 'idem', 0).map((record) => record.value);
    expect(values).toHaveLength(20);
    expect(new Set(values).size).toBe(20);

    await cluster.stopNode(0, 'SIGKILL');
    await cluster.startNode(0);
    await eventually(async () => expect(await cluster!.leaderOf('idem', 0)).toBe(0), 15_000);
    // The leadership can show before the node logs the replica it rebuilt.
    let rebuilt: Record<string, unknown> = {};
    await eventually(async () => {
      rebuilt = hostedRecord(0, 'idem');
    }, 15_000);
    expect(rebuilt['producerSnapshotOffset']).toMatch(/^\d+$/);
    expect(Number(rebuilt['producerSnapshotOffset'])).toBeGreaterThan(0);
    expect(rebuilt['producerBatchesReplayed']).toBeGreaterThan(0);

    // Duplicates of the last five batches are still recognised; the next one continues.
    expectWritten(await append('idem', idempotentBatch(1, 14, 1)), 19n, 19n);
    expectWritten(await append('idem', idempotentBatch(1, 10, 1)), 15n, 15n);
    expectRefused(await append('idem', idempotentBatch(0, 15, 1)), 'INVALID_PRODUCER_EPOCH');
    expectWritten(await append('idem', idempotentBatch(1, 15, 2)), 20n, 21n);
    expect(recordsOnDisk(cluster.dataDirOf(0), 'idem', 0)).toHaveLength(22);

    // A clean stop leaves a snapshot at the log end: the next start replays no header.
    await cluster.stopNode(0, 'SIGTERM');
    await cluster.startNode(0);
    await eventually(async () => expect(await cluster!.leaderOf('idem', 0)).toBe(0), 15_000);
    await eventually(
      async () =>
        expect(hostedRecord(0, 'idem')).toMatchObject({
          producerSnapshotOffset: '22',
          producerBatchesReplayed: 0,
        }),
      15_000,
    );
    expectWritten(await append('idem', idempotentBatch(1, 15, 2)), 20n, 21n);
  }, 90_000);

  it('a new leader after the old one is SIGKILLed still recognises duplicates', async () => {
    cluster = await StorageTestCluster.start(3, {
      nodeArgs: ['--replica-lag-time-max-ms', '2000'],
    });
    await cluster.createTopic('idem3', 1, 3, [{ name: 'min.insync.replicas', value: '2' }]);
    for (let sequence = 0; sequence < 6; sequence++) {
      const offset = BigInt(sequence * 2);
      expectWritten(
        await append('idem3', idempotentBatch(0, sequence * 2, 2)),
        offset,
        offset + 1n,
      );
    }
    const oldLeader = await cluster.leaderOf('idem3', 0);
    await cluster.stopNode(oldLeader, 'SIGKILL');
    const newLeader = await eventually(async () => {
      const leader = await cluster!.leaderOf('idem3', 0);
      expect(leader).toBeGreaterThanOrEqual(0);
      expect(leader).not.toBe(oldLeader);
      return leader;
    }, 20_000);
    // The lost answer of the last batch: its retry lands on the new leader.
    const retried = await eventually(async () => {
      const result = await append('idem3', idempotentBatch(0, 10, 2));
      expect(result.error?.code).toBeUndefined();
      return result;
    }, 20_000);
    expectWritten(retried, 10n, 11n);
    expectWritten(await append('idem3', idempotentBatch(0, 6, 2)), 6n, 7n);
    expectRefused(await append('idem3', idempotentBatch(0, 13, 1)), 'OUT_OF_ORDER_SEQUENCE_NUMBER');
    expectWritten(await append('idem3', idempotentBatch(0, 12, 1)), 12n, 12n);
    const stored = recordsOnDisk(cluster.dataDirOf(newLeader), 'idem3', 0);
    expect(stored.map((record) => record.offset)).toEqual(
      Array.from({ length: 13 }, (_, index) => BigInt(index)),
    );
  }, 90_000);

  it('AllocateProducerIds never repeats a block across a controller SIGKILL and restart', async () => {
    const metadataPath = path.join(
      mkdtempSync(path.join(tmpdir(), 'spool-producer-ids-')),
      'metadata.journal',
    );
    const firstIds: bigint[] = [];
    for (let run = 0; run < 2; run++) {
      const controller = await startServiceProcess('controller', ['--metadata-path', metadataPath]);
      const client = createGrpcClient(ControllerServiceClient, `127.0.0.1:${controller.grpcPort}`);
      try {
        for (let call = 0; call < 5; call++) {
          const block = await eventually(
            () => callOnce(client, client.allocateProducerIds, { coordinatorId: `run-${run}` }),
            15_000,
          );
          expect(block.count).toBe(1000);
          firstIds.push(block.firstProducerId);
        }
      } finally {
        client.close();
        controller.child.kill('SIGKILL');
        await controller.exited;
      }
    }
    expect(firstIds).toEqual(Array.from({ length: 10 }, (_, index) => BigInt(index * 1000)));
  }, 60_000);

  it("a coordinator's ProducerIdManager gets unique ids from the controller's blocks", async () => {
    const metadataPath = path.join(
      mkdtempSync(path.join(tmpdir(), 'spool-producer-ids-')),
      'metadata.journal',
    );
    const seen = new Set<bigint>();
    for (let run = 0; run < 2; run++) {
      const controller = await startServiceProcess('controller', ['--metadata-path', metadataPath]);
      const channel = controllerChannel([`127.0.0.1:${controller.grpcPort}`]);
      const manager = new ProducerIdManager({
        allocateBlock: controllerProducerIdBlocks(channel, `coordinator-${run}`),
      });
      try {
        // 2,500 producers: three blocks, the later ones fetched before the earlier ran out.
        for (let index = 0; index < 2_500; index++) {
          const response = await manager.initProducerId({ producerId: -1n, producerEpoch: -1 });
          expect(response.producerEpoch).toBe(0);
          expect(seen.has(response.producerId)).toBe(false);
          seen.add(response.producerId);
        }
      } finally {
        channel.close();
        controller.child.kill('SIGKILL');
        await controller.exited;
      }
    }
    expect(seen.size).toBe(5_000);
  }, 60_000);
});

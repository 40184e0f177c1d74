// Proves what a broker's offline data directory (log_dir_offline in its heartbeats, Kafka's
// OfflineLogDirs) does on the controller, in-process over gRPC on the local metadata backend: its
// leaderships move to other ISR members and it leaves every ISR it can leave, without being
// fenced; it joins no ISR while offline; a partition it alone had in sync waits without a leader;
// once a heartbeat says the directory is back, it may join ISRs again and leads that partition.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { callOnce, createGrpcClient, type RunningService } from '@spool/common';
import { ControllerServiceClient, type PartitionMetadata } from '@spool/protocol';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startController } from './controller-service';

describe("a broker's offline data directory", () => {
  const services: RunningService[] = [];
  const clients: ControllerServiceClient[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    for (const service of services.splice(0)) await service.stop();
  });

  async function cluster() {
    const metadataPath = path.join(
      mkdtempSync(path.join(tmpdir(), 'spool-log-dir-')),
      'metadata.journal',
    );
    const service = await startController({
      argv: [
        ...['--grpc-port', '0', '--metrics-port', '0', '--log-level', 'silent'],
        ...['--metadata-path', metadataPath, '--broker-session-timeout-ms', '60000'],
      ],
      env: {},
      handleSignals: false,
    });
    services.push(service);
    const client = createGrpcClient(ControllerServiceClient, `127.0.0.1:${service.grpcPort}`);
    clients.push(client);
    const epochs = new Map<number, bigint>();
    for (const brokerId of [0, 1, 2]) {
      const register = () =>
        callOnce(client, client.registerBroker, {
          brokerId,
          rack: '',
          endpoints: [{ name: 'grpc', host: '127.0.0.1', port: 1000 + brokerId }],
          incarnationId: `broker-${brokerId}`,
        });
      // The first call may come before the controller has won its election.
      await vi.waitFor(async () => epochs.set(brokerId, (await register()).brokerEpoch), {
        timeout: 5_000,
        interval: 50,
      });
    }
    const heartbeat = async (brokerId: number, logDirOffline: boolean) => {
      if (!epochs.has(brokerId)) throw new Error(`broker ${brokerId} has no epoch`);
      return callOnce(client, client.brokerHeartbeat, {
        brokerId,
        brokerEpoch: epochs.get(brokerId)!,
        logDirOffline,
        cleanerStates: [],
        replicaSizes: [],
      });
    };
    const partitions = async (topic: string): Promise<PartitionMetadata[]> => {
      const described = await callOnce(client, client.describeTopics, { names: [topic] });
      return described.topics[0]!.topic!.partitions;
    };
    const addToIsr = async (partition: PartitionMetadata, brokerId: number) => {
      const response = await callOnce(client, client.alterPartition, {
        brokerId: partition.leaderId,
        brokerEpoch: epochs.get(partition.leaderId)!,
        topics: [
          {
            topic: partition.topic,
            partitions: [
              {
                partition: partition.partition,
                leaderEpoch: partition.leaderEpoch,
                partitionEpoch: partition.partitionEpoch,
                newIsr: [...partition.isr, brokerId],
              },
            ],
          },
        ],
      });
      return response.topics[0]!.partitions[0]!;
    };
    return { client, epochs, heartbeat, partitions, addToIsr };
  }

  it('moves its leaderships and ISR places, keeps it out while offline, and lets it back', async () => {
    const { client, heartbeat, partitions, addToIsr } = await cluster();
    await callOnce(client, client.createTopics, {
      topics: [
        { name: 'shared', numPartitions: 6, replicationFactor: 3, configs: [] },
        { name: 'solo', numPartitions: 3, replicationFactor: 1, configs: [] },
      ],
      validateOnly: false,
    });
    const before = await partitions('shared');
    expect(before.some((partition) => partition.leaderId === 0)).toBe(true);
    const soloOnZero = (await partitions('solo')).find((partition) => partition.leaderId === 0);
    expect(soloOnZero).toBeDefined();

    expect(await heartbeat(0, true)).toMatchObject({ fenced: false });
    const offline = await partitions('shared');
    for (const partition of offline) {
      expect(partition.leaderId).not.toBe(0);
      expect([1, 2]).toContain(partition.leaderId);
      expect(partition.isr).not.toContain(0);
    }
    // Its only in-sync replica is out: no leader until it is back (no unclean election).
    const soloOffline = (await partitions('solo')).find(
      (partition) => partition.partition === soloOnZero!.partition,
    )!;
    expect(soloOffline).toMatchObject({ leaderId: -1, isr: [0], offline: true });
    // Still registered and heartbeating, but no leader may take it back into an ISR.
    expect(await heartbeat(0, true)).toMatchObject({ fenced: false });
    const refused = await addToIsr(offline[0]!, 0);
    expect(refused.error).toMatchObject({ code: 'INELIGIBLE_REPLICA' });
    expect(refused.error?.message).toMatch(/not live/);

    expect(await heartbeat(0, false)).toMatchObject({ fenced: false });
    const accepted = await addToIsr((await partitions('shared'))[0]!, 0);
    expect(accepted.error).toBeUndefined();
    expect(accepted.partitionMetadata?.isr).toContain(0);
    // The controller's maintenance elects it for the partition only it had in sync.
    await expect
      .poll(
        async () =>
          (await partitions('solo')).find(
            (partition) => partition.partition === soloOnZero!.partition,
          )?.leaderId,
        { timeout: 5_000 },
      )
      .toBe(0);
  });
});

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { callOnce, createGrpcClient } from '@spool/common';
import { Acks, DataPortClient, StorageServiceClient, type AppendResponse } from '@spool/protocol';
import { ControllerTestClient, eventually } from './controller-client';
import { startServiceProcess, type ServiceProcess } from './service-process';

/**
 * A controller and storage nodes as real processes on loopback, for tests of the data path.
 * Storage nodes keep their data directories across restarts, as pods keep their volumes.
 */
export class StorageTestCluster {
  readonly nodes = new Map<
    number,
    { process: ServiceProcess; dataDir: string; dataPort: number }
  >();
  private readonly directory = mkdtempSync(path.join(tmpdir(), 'spool-cluster-'));

  private constructor(
    readonly controller: ServiceProcess,
    readonly admin: ControllerTestClient,
    private readonly nodeArgs: readonly string[],
    /** Every controller the nodes know (the first is `controller`), for HA setups. */
    readonly controllers: readonly ServiceProcess[] = [controller],
  ) {}

  /**
   * `controllers`: controllers the test started itself (several on etcd, for failover); the
   * nodes are given all their addresses and `stop` kills them too. One is started otherwise.
   */
  static async start(
    nodeCount: number,
    options: {
      controllerArgs?: string[];
      nodeArgs?: string[];
      controllers?: ServiceProcess[];
    } = {},
  ): Promise<StorageTestCluster> {
    const controllers = options.controllers ?? [
      await startServiceProcess('controller', [
        '--broker-session-timeout-ms',
        '3000',
        ...(options.controllerArgs ?? []),
      ]),
    ];
    const controller = controllers[0]!;
    const admin = new ControllerTestClient(`127.0.0.1:${controller.grpcPort}`);
    const cluster = new StorageTestCluster(controller, admin, options.nodeArgs ?? [], controllers);
    await Promise.all(
      Array.from({ length: nodeCount }, (_, brokerId) => cluster.startNode(brokerId)),
    );
    return cluster;
  }

  /** Every controller's address, comma-separated, as the services' flag takes them. */
  get controllerAddresses(): string {
    return this.controllers.map((controller) => `127.0.0.1:${controller.grpcPort}`).join(',');
  }

  dataDirOf(brokerId: number): string {
    return path.join(this.directory, `storage-${brokerId}`);
  }

  async startNode(
    brokerId: number,
    options: { extraArgs?: string[]; dataDir?: string } = {},
  ): Promise<ServiceProcess> {
    const extraArgs = options.extraArgs ?? [];
    const dataDir =
      options.dataDir ?? this.nodes.get(brokerId)?.dataDir ?? this.dataDirOf(brokerId);
    const process = await startServiceProcess('storage-node', [
      '--broker-id',
      String(brokerId),
      '--data-dir',
      dataDir,
      '--data-port',
      '0',
      '--controller-addresses',
      this.controllerAddresses,
      '--broker-heartbeat-interval-ms',
      '250',
      ...this.nodeArgs,
      ...extraArgs,
    ]);
    const dataPort = dataPortOf(process);
    this.nodes.set(brokerId, { process, dataDir, dataPort });
    await eventually(async () => {
      const response = await fetch(`http://127.0.0.1:${process.metricsPort}/readyz`);
      if (response.status !== 200) throw new Error(`storage node ${brokerId} not ready`);
    }, 20_000);
    return process;
  }

  async stopNode(brokerId: number, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | string> {
    const node = this.nodes.get(brokerId)!;
    node.process.child.kill(signal);
    return node.process.exited;
  }

  /** The running process of a broker this cluster started. */
  processOf(brokerId: number): ServiceProcess {
    const node = this.nodes.get(brokerId);
    if (node === undefined) throw new Error(`storage node ${brokerId} was not started`);
    return node.process;
  }

  storageClient(brokerId: number): StorageServiceClient {
    return createGrpcClient(
      StorageServiceClient,
      `127.0.0.1:${this.nodes.get(brokerId)!.process.grpcPort}`,
    );
  }

  async dataClient(brokerId: number): Promise<DataPortClient> {
    return DataPortClient.connect('127.0.0.1', this.nodes.get(brokerId)!.dataPort);
  }

  /** Creates a topic and waits until every partition's leader serves it. */
  async createTopic(
    name: string,
    partitions: number,
    replicationFactor: number,
    configs: Array<{ name: string; value: string }> = [],
  ) {
    const response = await this.admin.createTopic(name, partitions, replicationFactor, configs);
    const error = response.results[0]!.error;
    if (error !== undefined) throw new Error(`${error.code}: ${error.message}`);
    for (let partition = 0; partition < partitions; partition++) {
      await eventually(async () => {
        const leader = await this.leaderOf(name, partition);
        const client = this.storageClient(leader);
        try {
          const offsets = await callOnce(client, client.listOffsets, {
            partitions: [{ topic: name, partition, spec: 1, timestampMs: 0n }],
          });
          const partitionError = offsets.results[0]!.error;
          if (partitionError !== undefined) throw new Error(partitionError.code);
        } finally {
          client.close();
        }
      }, 15_000);
    }
  }

  async leaderOf(topic: string, partition: number): Promise<number> {
    const described = await this.admin.call(this.admin.client.describeTopics, { names: [topic] });
    const found = described.topics[0]!.topic!.partitions.find(
      (candidate) => candidate.partition === partition,
    )!;
    return found.leaderId;
  }

  async append(
    topic: string,
    partition: number,
    records: Buffer,
    acks = Acks.ACKS_ALL,
  ): Promise<AppendResponse> {
    const client = this.storageClient(await this.leaderOf(topic, partition));
    try {
      return await callOnce(client, client.append, {
        partitions: [{ topic, partition, records }],
        acks,
        timeoutMs: 10_000,
      });
    } finally {
      client.close();
    }
  }

  async stop(): Promise<void> {
    this.admin.close();
    for (const node of this.nodes.values()) {
      node.process.child.kill('SIGKILL');
      await node.process.exited;
    }
    for (const controller of this.controllers) {
      controller.child.kill('SIGKILL');
      await controller.exited;
    }
  }
}

function dataPortOf(process: ServiceProcess): number {
  for (const line of process.logLines) {
    try {
      const record = JSON.parse(line) as { dataPort?: number };
      if (record.dataPort !== undefined) return record.dataPort;
    } catch {
      // Not a log record.
    }
  }
  throw new Error('the storage node did not log its data port');
}

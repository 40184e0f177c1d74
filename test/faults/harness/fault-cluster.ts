import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { serviceEntryPoint } from '../../support/service-process';
import { ControllerTestClient, eventually } from '../../support/controller-client';
import { FaultNetwork } from './fault-network';
import { MemberProcess, type MemberRole } from './member-process';

/**
 * The cluster a fault run attacks, every member a real process in its own network namespace:
 * a 3-member etcd, 2 controllers on it (etcd backend), 3 storage nodes (each data directory a
 * small tmpfs of its own, so a full disk is one filler file), 2 coordinators and 2 gateways (as a
 * Deployment runs several behind a Service; the SDK is given both and fails over).
 * Members listen on fixed ports at their own IPs, so a restart comes back where it was.
 * `stop()` removes everything (processes, namespaces, links, mounts), also after a failure.
 */
export const ports = {
  etcdClient: 2379,
  etcdPeer: 2380,
  grpc: 9000,
  metrics: 9100,
  data: 9200,
} as const;

export interface FaultClusterOptions {
  /** coordinators: how many coordinator processes (0 while the coordinator serves nothing). */
  readonly coordinators: number;
  /** storageDiskBytes: the size of each storage node's tmpfs. */
  readonly storageDiskBytes: number;
  readonly etcdPath?: string;
}

/** A controller's lease: short, so a failover fits in a short profile. */
export const controllerLeaseTtlMs = 2_000;
/** A storage node silent this long is fenced and its leaderships move. */
export const brokerSessionTimeoutMs = 4_000;
/** A coordinator silent this long loses its shards to the other one. */
export const coordinatorSessionTimeoutMs = 4_000;
/** A follower not caught up for this long leaves the ISR. */
export const replicaLagTimeMaxMs = 4_000;
const startTimeoutMs = 60_000;

export class FaultCluster {
  readonly members = new Map<string, MemberProcess>();
  readonly directory: string;
  readonly logDirectory: string;
  readonly storageMounts = new Map<number, string>();

  private constructor(readonly network: FaultNetwork) {
    this.directory = mkdtempSync(path.join(tmpdir(), `spool-faults-${network.prefix}-`));
    this.logDirectory = path.join(this.directory, 'logs');
    mkdirSync(this.logDirectory);
  }

  static async start(options: FaultClusterOptions): Promise<FaultCluster> {
    const network = FaultNetwork.create();
    const cluster = new FaultCluster(network);
    try {
      await cluster.startAll(options);
      return cluster;
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  private async startAll(options: FaultClusterOptions): Promise<void> {
    const etcdMembers = [0, 1, 2].map((index) => this.network.addMember(`etcd-${index}`));
    const initialCluster = etcdMembers
      .map((member) => `${member.name}=http://${member.ip}:${ports.etcdPeer}`)
      .join(',');
    for (const member of etcdMembers) {
      const clientUrl = `http://${member.ip}:${ports.etcdClient}`;
      const peerUrl = `http://${member.ip}:${ports.etcdPeer}`;
      this.add(
        'etcd',
        member,
        options.etcdPath ?? process.env['SPOOL_ETCD_PATH'] ?? 'etcd',
        [
          `--name=${member.name}`,
          `--data-dir=${path.join(this.directory, member.name)}`,
          `--listen-client-urls=${clientUrl}`,
          `--advertise-client-urls=${clientUrl}`,
          `--listen-peer-urls=${peerUrl}`,
          `--initial-advertise-peer-urls=${peerUrl}`,
          `--initial-cluster=${initialCluster}`,
          '--initial-cluster-state=new',
          `--initial-cluster-token=${this.network.prefix}`,
          '--heartbeat-interval=100',
          '--election-timeout=1000',
          // Raft's pre-vote (etcd 3.5's default, off in 3.4): a member back from a partition
          // asks before it campaigns, instead of forcing an election with the higher term it
          // reached alone, which cost the controllers their lease for seconds (issue 28).
          '--pre-vote=true',
          '--logger=zap',
          '--log-level=warn',
        ],
        async () => {
          const response = await fetch(`${clientUrl}/health`, {
            signal: AbortSignal.timeout(1_000),
          });
          return response.status === 200 && (await response.text()).includes('"true"');
        },
      );
    }
    await Promise.all(this.byRole('etcd').map((member) => member.start()));

    const etcdEndpoints = etcdMembers.map((member) => `http://${member.ip}:${ports.etcdClient}`);
    for (const index of [0, 1]) {
      this.addService('controller', `controller-${index}`, [
        '--metadata-backend',
        'etcd',
        '--etcd-endpoints',
        etcdEndpoints.join(','),
        '--cluster-name',
        'faults',
        '--controller-lease-ttl-ms',
        String(controllerLeaseTtlMs),
        '--broker-session-timeout-ms',
        String(brokerSessionTimeoutMs),
        '--coordinator-session-timeout-ms',
        String(coordinatorSessionTimeoutMs),
        // A few shards keep the cluster light on a 2-core machine; 2 coordinators share them.
        '--offsets-topic-num-partitions',
        '4',
      ]);
    }
    await Promise.all(this.byRole('controller').map((member) => member.start()));
    const controllerAddresses = this.byRole('controller')
      .map((member) => `${member.ip}:${ports.grpc}`)
      .join(',');

    for (const brokerId of [0, 1, 2]) {
      const mountPoint = path.join(this.directory, `storage-${brokerId}`);
      mkdirSync(mountPoint);
      this.network.recordMount(mountPoint);
      execFileSync('mount', [
        '-t',
        'tmpfs',
        '-o',
        `size=${options.storageDiskBytes}`,
        'tmpfs',
        mountPoint,
      ]);
      this.storageMounts.set(brokerId, mountPoint);
      mkdirSync(path.join(mountPoint, 'data'));
      this.addService('storage-node', `storage-${brokerId}`, [
        '--broker-id',
        String(brokerId),
        '--data-dir',
        path.join(mountPoint, 'data'),
        '--data-port',
        String(ports.data),
        '--controller-addresses',
        controllerAddresses,
        '--broker-heartbeat-interval-ms',
        '250',
        '--replica-lag-time-max-ms',
        String(replicaLagTimeMaxMs),
        '--replica-sync-readiness-timeout-ms',
        '15000',
        '--test-slow-disk-file',
        this.slowDiskFile(brokerId),
      ]);
    }
    await Promise.all(this.byRole('storage-node').map((member) => member.start()));

    for (let index = 0; index < options.coordinators; index++) {
      this.addService('coordinator', `coordinator-${index}`, [
        '--coordinator-id',
        `coordinator-${index}`,
        '--controller-addresses',
        controllerAddresses,
        '--coordinator-session-timeout-ms',
        String(coordinatorSessionTimeoutMs),
        '--group-consumer-session-timeout-ms',
        '10000',
        '--group-consumer-heartbeat-interval-ms',
        '1000',
        // Checkpoints (and their fenced deletions) often, so the faults hit them too: a
        // coordinator paused or cut off while it checkpoints must not delete a newer owner's
        // commits, which the checker would see as offsets going backwards.
        '--offsets-checkpoint-interval-records',
        '100',
      ]);
    }
    await Promise.all(this.byRole('coordinator').map((member) => member.start()));

    for (const index of [0, 1]) {
      this.addService('gateway', `gateway-${index}`, [
        '--controller-addresses',
        controllerAddresses,
      ]);
    }
    await Promise.all(this.byRole('gateway').map((member) => member.start()));
  }

  private add(
    role: MemberRole,
    member: ReturnType<FaultNetwork['addMember']>,
    command: string,
    args: string[],
    isReady: () => Promise<boolean>,
  ): void {
    this.members.set(
      member.name,
      new MemberProcess({
        role,
        member,
        command,
        args,
        logDirectory: this.logDirectory,
        isReady,
        startTimeoutMs,
      }),
    );
  }

  private addService(role: Exclude<MemberRole, 'etcd'>, name: string, args: string[]): void {
    const member = this.network.addMember(name);
    const metricsUrl = `http://${member.ip}:${ports.metrics}`;
    this.add(
      role,
      member,
      process.execPath,
      [
        serviceEntryPoint(role),
        '--host',
        member.ip,
        '--grpc-port',
        String(ports.grpc),
        '--metrics-port',
        String(ports.metrics),
        ...args,
      ],
      async () =>
        (await fetch(`${metricsUrl}/readyz`, { signal: AbortSignal.timeout(1_000) })).status ===
        200,
    );
  }

  /** The file whose content (a delay in ms) the storage node's slow-disk test hook applies. */
  slowDiskFile(brokerId: number): string {
    return path.join(this.directory, `slow-disk-${brokerId}`);
  }

  member(name: string): MemberProcess {
    const member = this.members.get(name);
    if (member === undefined) throw new Error(`no cluster member ${name}`);
    return member;
  }

  byRole(role: MemberRole): MemberProcess[] {
    return [...this.members.values()].filter((member) => member.role === role);
  }

  get gatewayAddresses(): string[] {
    return this.byRole('gateway').map((member) => `${member.ip}:${ports.grpc}`);
  }

  storageDataDir(brokerId: number): string {
    return path.join(this.storageMounts.get(brokerId)!, 'data');
  }

  /** A client of whichever controller answers (the standby forwards or refuses writes). */
  async withController<T>(call: (client: ControllerTestClient) => Promise<T>): Promise<T> {
    return eventually(
      async () => {
        let lastError: unknown;
        for (const controller of this.byRole('controller')) {
          const client = new ControllerTestClient(`${controller.ip}:${ports.grpc}`);
          try {
            return await call(client);
          } catch (error) {
            lastError = error;
          } finally {
            client.close();
          }
        }
        throw lastError;
      },
      30_000,
      200,
    );
  }

  /** Stops every process, then removes namespaces, links and mounts; never throws. */
  async stop(): Promise<void> {
    await Promise.all(
      [...this.members.values()].map((member) => member.kill().catch(() => undefined)),
    );
    for (const member of this.members.values()) member.closeLog();
    this.network.teardown();
  }

  /** Removes the run's files (logs included); call after a passing run only. */
  removeFiles(): void {
    rmSync(this.directory, { recursive: true, force: true });
  }
}

import { execFileSync } from 'node:child_process';
import { rmSync, statfsSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { FaultCluster } from './harness/fault-cluster';
import type { MemberProcess, MemberRole } from './harness/member-process';
import { faultKinds, type FaultKind, type HistoryWriter } from './history';
import type { SeededRandom } from '../support/seeded-random';

/**
 * The nemesis: on a schedule drawn from the run's seed, one fault at a time, each bounded in time
 * and healed before the next is drawn:
 *
 * - kill: SIGKILL any member (etcd, controller, storage node, coordinator, gateway), keep it
 *   down a moment, start it again with its data and address;
 * - pause: SIGSTOP any member for a few seconds (a long GC pause), then SIGCONT;
 * - partition: cut a storage node, a controller or an etcd member off the network, then heal;
 * - disk-full: fill a storage node's tmpfs with a filler file, then delete it;
 * - slow-disk: make every log append of a storage node block a while (its test hook), then stop.
 *
 * Kinds come in rounds: each round is every kind once, in a seeded order, so even a short run
 * injects a few of each. Targets and durations are seeded too; `SPOOL_FAULTS_SEED` replays the
 * same schedule (the timing of the cluster's answers still varies). `kinds` and `targetRoles` narrow
 * the draw to one class of fault (`npm run faults -- --kinds kill,pause --targets etcd`), for
 * short runs that measure one fix.
 */
export interface NemesisOptions {
  /** Bounds of how long a fault is held, in ms. */
  readonly holdMs: { min: number; max: number };
  /** Bounds of the quiet time between two faults, in ms. */
  readonly gapMs: { min: number; max: number };
  /** Bounds of the slow disk's delay per append, in ms. */
  readonly slowDiskDelayMs: { min: number; max: number };
  /**
   * How many faults may be in progress at once (each on its own member); above 1 the seed still
   * fixes the draws, but their interleaving follows the cluster's timing.
   */
  readonly concurrency: number;
  /** Only these kinds are drawn (`--kinds`); all of them when absent. */
  readonly kinds?: readonly FaultKind[];
  /** Only members of these roles are targets (`--targets`); every role when absent. */
  readonly targetRoles?: readonly MemberRole[];
}

export class Nemesis {
  readonly injected: Record<FaultKind, number> = {
    kill: 0,
    pause: 0,
    partition: 0,
    'disk-full': 0,
    'slow-disk': 0,
  };
  private stopping = false;
  private loop: Promise<void> | undefined;
  private round: FaultKind[] = [];
  /** Members under a fault now: a second fault picks another member. */
  private readonly busy = new Set<string>();

  constructor(
    private readonly cluster: FaultCluster,
    private readonly random: SeededRandom,
    private readonly history: HistoryWriter,
    private readonly options: NemesisOptions,
    private readonly log: (line: string) => void = () => {},
  ) {}

  start(): void {
    this.loop = Promise.all(
      Array.from({ length: this.options.concurrency }, () => this.run()),
    ).then(() => undefined);
  }

  /** Lets the fault in progress finish (it is healed) and stops; rethrows a nemesis failure. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      await this.sleep(this.random.integer(this.options.gapMs.min, this.options.gapMs.max));
      if (this.stopping) break;
      await this.injectOne();
    }
  }

  private nextKind(): FaultKind {
    if (this.round.length === 0) {
      const kinds = [...(this.options.kinds ?? faultKinds)];
      while (kinds.length > 0) {
        this.round.push(kinds.splice(this.random.integer(0, kinds.length - 1), 1)[0]!);
      }
    }
    return this.round.shift()!;
  }

  private async injectOne(): Promise<void> {
    const kind = this.nextKind();
    const holdMs = this.random.integer(this.options.holdMs.min, this.options.holdMs.max);
    const cluster = this.cluster;
    const storageNodes = cluster.byRole('storage-node');
    switch (kind) {
      case 'kill': {
        const target = this.pickFree([...cluster.members.values()]);
        if (target === undefined) break;
        await this.fault(kind, target.name, `down ${holdMs} ms`, async () => {
          await target.kill();
          return async () => {
            await this.sleep(holdMs);
            await target.start();
          };
        });
        break;
      }
      case 'pause': {
        const target = this.pickFree([...cluster.members.values()]);
        if (target === undefined) break;
        await this.fault(kind, target.name, `${holdMs} ms`, async () => {
          target.pause();
          return async () => {
            await this.sleep(holdMs);
            target.resume();
          };
        });
        break;
      }
      case 'partition': {
        const target = this.pickFree([
          ...storageNodes,
          ...cluster.byRole('controller'),
          ...cluster.byRole('etcd'),
        ]);
        if (target === undefined) break;
        await this.fault(kind, target.name, `${holdMs} ms`, async () => {
          cluster.network.isolate(target.name);
          return async () => {
            await this.sleep(holdMs);
            cluster.network.heal(target.name);
          };
        });
        break;
      }
      case 'disk-full': {
        const target = this.pickFree(storageNodes);
        if (target === undefined) break;
        const brokerId = storageNodes.indexOf(target);
        const mountPoint = cluster.storageMounts.get(brokerId)!;
        const filler = path.join(mountPoint, 'filler');
        await this.fault(kind, `storage-${brokerId}`, `${holdMs} ms`, async () => {
          fillDisk(filler, mountPoint);
          return async () => {
            await this.sleep(holdMs);
            rmSync(filler, { force: true });
          };
        });
        break;
      }
      case 'slow-disk': {
        const target = this.pickFree(storageNodes);
        if (target === undefined) break;
        const brokerId = storageNodes.indexOf(target);
        const delayMs = this.random.integer(
          this.options.slowDiskDelayMs.min,
          this.options.slowDiskDelayMs.max,
        );
        const file = cluster.slowDiskFile(brokerId);
        await this.fault(
          kind,
          `storage-${brokerId}`,
          `${delayMs} ms per append for ${holdMs} ms`,
          async () => {
            writeFileSync(file, String(delayMs));
            return async () => {
              await this.sleep(holdMs);
              rmSync(file, { force: true });
            };
          },
        );
        break;
      }
    }
  }

  /** Injects a fault, records it, and heals it (always, even if the injection half failed). */
  private async fault(
    kind: FaultKind,
    target: string,
    detail: string,
    inject: () => Promise<() => Promise<void>>,
  ): Promise<void> {
    this.injected[kind]++;
    this.busy.add(target);
    this.history.append({ type: 'nemesis', phase: 'start', fault: kind, target, detail });
    this.log(`nemesis: ${kind} ${target} (${detail})`);
    try {
      const heal = await inject();
      await heal();
    } finally {
      this.busy.delete(target);
    }
    this.history.append({ type: 'nemesis', phase: 'heal', fault: kind, target });
  }

  /** A seeded pick among the members of the chosen roles that are not under a fault now. */
  private pickFree(members: readonly MemberProcess[]): MemberProcess | undefined {
    const roles = this.options.targetRoles;
    const free = members.filter(
      (member) =>
        !this.busy.has(member.name) && (roles === undefined || roles.includes(member.role)),
    );
    return free.length === 0 ? undefined : this.random.pick(free);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
}

/** Takes every free byte of the tmpfs (fallocate where it works, else writes of zeros). */
function fillDisk(filler: string, mountPoint: string): void {
  const stats = statfsSync(mountPoint);
  const freeBytes = stats.bavail * stats.bsize;
  try {
    execFileSync('fallocate', ['-l', String(freeBytes), filler], { stdio: 'ignore' });
  } catch {
    // fallocate on a full disk fails past what fits; the rest is filled by writes.
  }
  const chunk = Buffer.alloc(1024 * 1024);
  for (;;) {
    const free = statfsSync(mountPoint);
    const remainingBytes = free.bavail * free.bsize;
    if (remainingBytes === 0) break;
    try {
      writeFileSync(filler, chunk.subarray(0, Math.min(chunk.length, remainingBytes)), {
        flag: 'a',
      });
    } catch {
      break;
    }
  }
}

/** Heals whatever a failed run may have left faulty: network, pauses, disks, slow disks. */
export function healEverything(cluster: FaultCluster, members: Iterable<MemberProcess>): void {
  for (const member of members) {
    try {
      cluster.network.heal(member.name);
    } catch {
      // Already up.
    }
    member.resume();
  }
  for (const [brokerId, mountPoint] of cluster.storageMounts) {
    rmSync(path.join(mountPoint, 'filler'), { force: true });
    rmSync(cluster.slowDiskFile(brokerId), { force: true });
  }
}

import { existsSync, readFileSync } from 'node:fs';
import type { HistoryEventInput, MilestoneKind } from './history';

/**
 * Reads the steps of each recovery out of the logs of a fault run: the members' logs (pino JSON
 * lines on stdout, which the harness appends to `<name>.log`) and the SDK's debug log of the
 * workload. Each line this knows becomes a `milestone` for the history, with the time the
 * process logged it; outages.ts cuts the outages at them. The lines, by process:
 *
 * - controller: `broker fenced: <reason>` (electionMs), `coordinators removed` (electionMs),
 *   `this controller is now active` (or `... active again`, resumed after a suspended lease),
 *   `leaders elected`;
 * - storage node: `ISR changed` with shrunk > 0 (a leader dropping a lagging follower) or
 *   expanded > 0 (taking one back), `replica role changed` to leader;
 * - gateway: `metadata applied` that moved a leader epoch, a broker or a shard, and `metadata
 *   loaded` (a restarted gateway's first picture);
 * - coordinator: `offsets shard loaded` (loadMs);
 * - SDK: `membership state change` to stable, `retrying a produce batch` and `consume stream
 *   failed, opening a new one` (backoffMs).
 */
export interface LogFile {
  /** The member (or `client`) the log belongs to. */
  readonly source: string;
  readonly path: string;
}

type Milestone = Extract<HistoryEventInput, { type: 'milestone' }> & { timeMs: number };

export function readMilestones(files: readonly LogFile[]): Milestone[] {
  const milestones: Milestone[] = [];
  for (const file of files) {
    if (!existsSync(file.path)) continue;
    const gateway = new GatewayLeaders();
    for (const line of readFileSync(file.path, 'utf8').split('\n')) {
      if (!line.startsWith('{')) continue;
      let entry: LogEntry;
      try {
        entry = JSON.parse(line) as LogEntry;
      } catch {
        continue;
      }
      const milestone = milestoneOf(entry, file.source, gateway);
      if (milestone !== undefined) milestones.push(milestone);
    }
  }
  return milestones.sort((left, right) => left.timeMs - right.timeMs);
}

interface LogEntry {
  readonly time?: string | number;
  readonly msg?: string;
  readonly [field: string]: unknown;
}

export function milestoneOf(
  entry: LogEntry,
  source: string,
  gateway = new GatewayLeaders(),
): Milestone | undefined {
  const timeMs = typeof entry.time === 'number' ? entry.time : Date.parse(entry.time ?? '');
  const message = entry.msg;
  if (!Number.isFinite(timeMs) || typeof message !== 'string') return undefined;
  const make = (kind: MilestoneKind, detail: string, durationMs?: unknown): Milestone => ({
    type: 'milestone',
    timeMs,
    kind,
    source: detail === '' ? source : `${source} ${detail}`,
    ...(typeof durationMs === 'number' ? { durationMs } : {}),
  });
  if (message.startsWith('broker fenced')) {
    return make('broker-fenced', `broker ${String(entry['brokerId'])}`, entry['electionMs']);
  }
  switch (message) {
    case 'coordinators removed':
      return make('coordinators-removed', String(entry['coordinators']), entry['electionMs']);
    case 'this controller is now active':
      return make('controller-active', '');
    case 'controller lease renewed by etcd: this controller is active again':
      // A suspended controller that kept its leadership through an etcd leader election.
      return make('controller-active', 'resumed');
    case 'leaders elected':
      return make('leaders-elected', `${String(entry['partitions'])} partitions`);
    case 'ISR changed':
      // The storage node's line counts shrinks and expansions; the controller's (a sample of
      // ISRs) does not.
      if (typeof entry['shrunk'] === 'number' && entry['shrunk'] > 0) {
        return make('isr-shrunk', `${entry['shrunk']} partitions`);
      }
      return typeof entry['expanded'] === 'number' && entry['expanded'] > 0
        ? make('isr-expanded', `${entry['expanded']} partitions`)
        : undefined;
    case 'replica role changed':
      return entry['role'] === 'leader'
        ? make('replica-leader', `${String(entry['partition'])}@${String(entry['leaderEpoch'])}`)
        : undefined;
    case 'metadata applied': {
      const moved = gateway.movedBy(entry);
      return moved === '' ? undefined : make('gateway-metadata', moved);
    }
    case 'metadata loaded':
      return make('gateway-metadata', 'loaded');
    case 'offsets shard loaded':
      return make('shard-loaded', `shard ${String(entry['shard'])}`, entry['loadMs']);
    case 'membership state change':
      return entry['to'] === 'stable' ? make('member-stable', '') : undefined;
    case 'retrying a produce batch':
      return {
        ...make('produce-retry', String(entry['code']), entry['backoffMs']),
        source: String(entry['code']),
      };
    case 'consume stream failed, opening a new one':
      return {
        ...make('consume-retry', String(entry['code']), entry['backoffMs']),
        source: String(entry['code']),
      };
    default:
      return undefined;
  }
}

/**
 * The leader epochs one gateway's log has shown so far, so a `metadata applied` line that only
 * changed an ISR is no milestone, and one that moved a leader, a broker or a shard is.
 */
export class GatewayLeaders {
  private readonly epochOf = new Map<string, number>();

  /** What the line moved (empty: nothing a route depends on). */
  movedBy(entry: LogEntry): string {
    const moved: string[] = [];
    for (const leader of (entry['leaders'] as string[] | undefined) ?? []) {
      const match = /^(.+):(-?\d+)@(\d+)$/.exec(leader);
      if (match === null) continue;
      const epoch = Number(match[3]);
      const previous = this.epochOf.get(match[1]!);
      this.epochOf.set(match[1]!, epoch);
      if (previous === undefined || epoch > previous) moved.push(leader);
    }
    const shards = (entry['shards'] as number[] | undefined) ?? [];
    if (shards.length > 0) moved.push(`shards ${shards.join(',')}`);
    if (typeof entry['brokers'] === 'number' && entry['brokers'] > 0) moved.push('brokers');
    return moved.join(' ');
  }
}

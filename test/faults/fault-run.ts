import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { checkHistory, type CheckResult } from './checker';
import { compareReplicas, finalRead, highWatermarks, waitForFullIsr } from './final-read';
import { FaultCluster } from './harness/fault-cluster';
import type { MemberRole } from './harness/member-process';
import { HistoryWriter, faultKinds, readHistory, type FaultKind } from './history';
import { readMilestones } from './milestones';
import { Nemesis, healEverything, type NemesisOptions } from './nemesis';
import { formatOutages, outageBreakdown, outageMsMin, type Outage } from './outages';
import { SeededRandom } from '../support/seeded-random';
import { Workload } from './workload';

/**
 * One fault run from start to verdict: start the cluster, create the topic (RF 3,
 * min.insync.replicas 2), run the workload while the nemesis injects faults for `faultMs`, heal
 * everything, let the cluster recover (full ISRs), stop the producers, let the consumer catch up,
 * read every partition back, compare the replicas on disk, and check the history. The history
 * path and the seed are printed first, so a failed run can be studied and replayed.
 */
export interface FaultProfile {
  readonly faultMs: number;
  readonly partitions: number;
  readonly producers: number;
  readonly producePauseMs: number;
  readonly recordsPerSend: number;
  readonly storageDiskBytes: number;
  readonly coordinators: number;
  readonly idempotent: boolean;
  /** Members of the consumer group (0: one consumer without a group). */
  readonly groupMembers: number;
  readonly nemesis: NemesisOptions;
}

export const shortProfile: FaultProfile = {
  faultMs: 100_000,
  partitions: 4,
  // At most producers × recordsPerSend per producePauseMs (3,000 records/s); the round trip of
  // an acks=all send on a busy 2-core machine makes it less.
  producers: 3,
  producePauseMs: 50,
  recordsPerSend: 50,
  storageDiskBytes: 64 * 1024 * 1024,
  coordinators: 2,
  idempotent: true,
  groupMembers: 2,
  nemesis: {
    holdMs: { min: 2_000, max: 6_000 },
    gapMs: { min: 1_000, max: 3_000 },
    slowDiskDelayMs: { min: 20, max: 200 },
    concurrency: 1,
  },
};

export function longProfile(minutes: number): FaultProfile {
  return {
    ...shortProfile,
    faultMs: minutes * 60_000,
    // At most 8,000 records/s.
    producers: 4,
    recordsPerSend: 100,
    storageDiskBytes: 256 * 1024 * 1024,
    nemesis: { ...shortProfile.nemesis, holdMs: { min: 2_000, max: 12_000 }, concurrency: 2 },
  };
}

const memberRoles: readonly MemberRole[] = [
  'etcd',
  'controller',
  'storage-node',
  'coordinator',
  'gateway',
];

/**
 * The nemesis's narrowing from `--kinds` and `--targets` (comma-separated lists; absent or empty:
 * no narrowing) and `--concurrency`. A name that is not a fault kind or a member role, or a
 * concurrency that is not an integer from 1 to 8, is refused, naming it.
 */
export function nemesisFilter(
  kinds: string | undefined,
  targets: string | undefined,
  concurrency?: string,
): Pick<NemesisOptions, 'kinds' | 'targetRoles'> & { concurrency?: number } {
  const parse = <T extends string>(list: string | undefined, known: readonly T[], what: string) => {
    const names = (list ?? '')
      .split(',')
      .map((name) => name.trim())
      .filter((name) => name !== '');
    for (const name of names) {
      if (!known.includes(name as T)) {
        throw new Error(`faults: unknown ${what} "${name}"; known: ${known.join(', ')}`);
      }
    }
    return names.length === 0 ? undefined : (names as T[]);
  };
  const parsedKinds = parse(kinds, faultKinds, 'fault kind');
  const parsedRoles = parse(targets, memberRoles, 'target role');
  const parsedConcurrency = concurrency === undefined ? undefined : Number(concurrency);
  if (
    parsedConcurrency !== undefined &&
    !(Number.isInteger(parsedConcurrency) && parsedConcurrency >= 1 && parsedConcurrency <= 8)
  ) {
    throw new Error(`faults: --concurrency must be an integer from 1 to 8, got "${concurrency}"`);
  }
  return {
    ...(parsedConcurrency === undefined ? {} : { concurrency: parsedConcurrency }),
    ...(parsedKinds === undefined ? {} : { kinds: parsedKinds }),
    ...(parsedRoles === undefined ? {} : { targetRoles: parsedRoles }),
  };
}

export interface FaultRunSummary extends CheckResult {
  readonly seed: number;
  readonly faults: Record<FaultKind, number>;
  readonly historyPath: string;
  readonly durationMs: number;
  /** Members that exited without being killed (a crash is a bug even if nothing was lost). */
  readonly crashes: string[];
  /** Every produce and consume outage over 1 s, explained (outages.ts). */
  readonly outages: Outage[];
}

const topic = 'faults';
const replicationFactor = 3;
const warmUpMs = 3_000;
/** How long the group may take after the producers stop to deliver up to the high watermarks. */
const catchUpTimeoutMs = 60_000;

export async function runFaults(
  profile: FaultProfile,
  seed: number,
  log: (line: string) => void,
): Promise<FaultRunSummary> {
  const startedAtMs = Date.now();
  const historyDirectory = mkdtempSync(path.join(tmpdir(), 'spool-faults-history-'));
  const history = new HistoryWriter(path.join(historyDirectory, 'history.jsonl'));
  log(`faults: seed ${seed} (SPOOL_FAULTS_SEED=${seed} replays it)`);
  log(`faults: history ${history.path}`);
  const cluster = await FaultCluster.start({
    coordinators: profile.coordinators,
    storageDiskBytes: profile.storageDiskBytes,
  });
  log(`faults: cluster up in ${Date.now() - startedAtMs} ms; logs in ${cluster.logDirectory}`);
  let workload: Workload | undefined;
  let nemesis: Nemesis | undefined;
  let passed = false;
  try {
    await cluster.withController(async (client) => {
      const response = await client.createTopic(topic, profile.partitions, replicationFactor, [
        { name: 'min.insync.replicas', value: '2' },
        { name: 'segment.bytes', value: String(1024 * 1024) },
      ]);
      const error = response.results[0]!.error;
      if (error !== undefined && error.code !== 'TOPIC_ALREADY_EXISTS') {
        throw new Error(`${error.code}: ${error.message}`);
      }
    });
    await waitForFullIsr(cluster, topic, replicationFactor);
    workload = new Workload(
      {
        gatewayAddresses: cluster.gatewayAddresses,
        topic,
        partitions: profile.partitions,
        producers: profile.producers,
        producePauseMs: profile.producePauseMs,
        recordsPerSend: profile.recordsPerSend,
        clientLogPath: path.join(historyDirectory, 'client.log'),
        idempotent: profile.idempotent,
        groupMembers: profile.groupMembers,
      },
      history,
    );
    workload.start();
    await new Promise((resolve) => setTimeout(resolve, warmUpMs));

    history.append({ type: 'phase', phase: 'workload' });
    nemesis = new Nemesis(cluster, new SeededRandom(seed), history, profile.nemesis, log);
    nemesis.start();
    await new Promise((resolve) => setTimeout(resolve, profile.faultMs));
    await nemesis.stop();
    healEverything(cluster, cluster.members.values());
    // A member that crashed by itself is started again, so the final phase has the whole cluster.
    for (const member of cluster.members.values()) {
      if (!member.isRunning) await member.start();
    }
    history.append({ type: 'phase', phase: 'healed' });
    log('faults: every fault healed; waiting for full ISRs');

    await waitForFullIsr(cluster, topic, replicationFactor);
    await workload.stopProducers();
    const highWatermarkOf = await highWatermarks(workload.spoolClient, topic);
    const deadline = Date.now() + catchUpTimeoutMs;
    while (
      [...highWatermarkOf].some(([partition, high]) => workload!.deliveredUpTo(partition) < high) &&
      Date.now() < deadline
    ) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    history.append({ type: 'phase', phase: 'final' });
    await finalRead(workload.spoolClient, topic, highWatermarkOf, history);
    await compareReplicas(cluster, topic, [0, 1, 2], highWatermarkOf, history);
    await workload.stop();
    // The recoveries' steps, as the services and the SDK logged them, for the outage breakdown.
    const logFiles = [
      ...[...cluster.members.values()].map((member) => ({
        source: member.name,
        path: path.join(cluster.logDirectory, `${member.name}.log`),
      })),
      { source: 'client', path: path.join(historyDirectory, 'client.log') },
    ];
    for (const milestone of readMilestones(logFiles)) history.appendAt(milestone);
    history.close();

    const events = readHistory(history.path);
    const result = checkHistory(events);
    const summary: FaultRunSummary = {
      ...result,
      outages: outageBreakdown(events),
      seed,
      faults: { ...nemesis.injected },
      historyPath: history.path,
      durationMs: Date.now() - startedAtMs,
      crashes: [...cluster.members.values()].flatMap((member) => member.unexpectedExits),
    };
    passed = violationCount(summary) === 0 && summary.crashes.length === 0;
    return summary;
  } finally {
    await nemesis?.stop().catch(() => undefined);
    await workload?.stop().catch(() => undefined);
    await cluster.stop();
    // SPOOL_FAULTS_KEEP_LOGS=1 keeps a passing run's logs too, to study its outages.
    if (passed && process.env['SPOOL_FAULTS_KEEP_LOGS'] === undefined) cluster.removeFiles();
    else log(`faults: kept the cluster's logs in ${cluster.logDirectory}`);
  }
}

export function violationCount(result: CheckResult): number {
  return (
    result.lost +
    result.duplicated +
    result.reordered +
    result.diverged +
    result.undelivered +
    result.offsetsBackwards
  );
}

/** The summary table, then (the last line) the JSON the brief asks for. */
export function formatSummary(summary: FaultRunSummary): string {
  const rows: Array<[string, string | number]> = [
    ['seed', summary.seed],
    ['duration (s)', Math.round(summary.durationMs / 1000)],
    ...Object.entries(summary.faults).map(
      ([kind, count]) => [`faults: ${kind}`, count] as [string, number],
    ),
    ['sends invoked', summary.invoked],
    ['sends acknowledged', summary.acknowledged],
    ['sends failed', summary.failed],
    ['records delivered', summary.delivered],
    ['offsets committed', summary.committed],
    ['records read back', summary.readRecords],
    ['lost', summary.lost],
    ['duplicated', summary.duplicated],
    ['reordered', summary.reordered],
    ['diverged', summary.diverged],
    ['undelivered', summary.undelivered],
    ['offsets backwards', summary.offsetsBackwards],
    ['processes crashed', summary.crashes.length],
    ['longest produce outage (ms)', summary.longestProduceOutageMs],
    ['longest consume outage (ms)', summary.longestConsumeOutageMs],
    ['produce outages > 5 s', summary.outages.filter(isLongProduceOutage).length],
    ['consume outages > 5 s', summary.outages.filter(isLongConsumeOutage).length],
    // The issue's targets: the longest outages that are not its exception (outages.ts).
    ['longest produce outage, not excepted (ms)', longestNotExcepted(summary, 'produce')],
    ['longest consume outage, not excepted (ms)', longestNotExcepted(summary, 'consume')],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  const table = rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`).join('\n');
  const examples = Object.entries({ ...summary.examples, crashes: summary.crashes })
    .filter(([, list]) => list.length > 0)
    .map(([kind, list]) => `${kind}:\n  ${list.join('\n  ')}`)
    .join('\n');
  const breakdown = formatOutages(summary.outages);
  const json = JSON.stringify({
    lost: summary.lost,
    duplicated: summary.duplicated,
    reordered: summary.reordered,
    diverged: summary.diverged,
    undelivered: summary.undelivered,
    offsetsBackwards: summary.offsetsBackwards,
    seed: summary.seed,
    faults: summary.faults,
    longestProduceOutageMs: summary.longestProduceOutageMs,
    longestConsumeOutageMs: summary.longestConsumeOutageMs,
    longestProduceOutageNotExceptedMs: longestNotExcepted(summary, 'produce'),
    longestConsumeOutageNotExceptedMs: longestNotExcepted(summary, 'consume'),
    crashes: summary.crashes.length,
    outages: summary.outages.map((outage) => ({
      ...outage,
      milestones: outage.milestones.slice(0, 20),
    })),
  });
  return `${table}\n${breakdown}\n${examples === '' ? '' : `${examples}\n`}${json}`;
}

const isLongProduceOutage = (outage: Outage): boolean =>
  outage.kind === 'produce' && outage.durationMs > 5_000;
const isLongConsumeOutage = (outage: Outage): boolean =>
  outage.kind === 'consume' && outage.durationMs > 5_000;

/**
 * The longest outage of a kind that is not excepted: the longest over 1 s that the breakdown
 * found, or the longest of all when it is shorter (the breakdown lists those over 1 s only).
 */
function longestNotExcepted(summary: FaultRunSummary, kind: Outage['kind']): number {
  const longestOfAll =
    kind === 'produce' ? summary.longestProduceOutageMs : summary.longestConsumeOutageMs;
  const broken = summary.outages.filter((outage) => outage.kind === kind);
  const notExcepted = broken.filter((outage) => outage.excepted === null);
  if (notExcepted.length > 0) return Math.max(...notExcepted.map((outage) => outage.durationMs));
  // None over 1 s: the longest is at most that (and at most the longest of all).
  return broken.length === 0 ? longestOfAll : Math.min(longestOfAll, outageMsMin);
}

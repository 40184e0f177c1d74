import {
  Spool,
  type Admin,
  type ClusterDescription,
  type SpoolSslOptions,
  type TopicDescription,
} from '@spool/client';
import { sleep } from '@spool/common';

/**
 * When `spool dev` may say "ready": every storage node is registered and not fenced, and every
 * partition of every topic, __consumer_offsets included, has a leader and all its replicas in
 * the ISR. Asked of the gateway through the SDK's admin API, as `spool cluster status` does, so
 * "ready" means what a client would see.
 */

export interface SyncReport {
  readonly partitionsTotal: number;
  readonly partitionsInSync: number;
  /** Storage nodes the cluster does not show as alive: missing or fenced. */
  readonly brokersNotAlive: readonly string[];
  /** Partitions not in sync, each as `topic-partition (leader L, replicas R, isr I)`. */
  readonly partitionsOutOfSync: readonly string[];
}

export function isInSync(report: SyncReport): boolean {
  return report.brokersNotAlive.length === 0 && report.partitionsOutOfSync.length === 0;
}

export function syncReport(
  cluster: ClusterDescription,
  topics: readonly TopicDescription[],
  brokerIds: readonly number[],
): SyncReport {
  const brokersNotAlive: string[] = [];
  for (const brokerId of brokerIds) {
    const broker = cluster.brokers.find((candidate) => candidate.nodeId === brokerId);
    if (broker === undefined) brokersNotAlive.push(`broker ${brokerId} not registered`);
    else if (broker.state !== 'ALIVE') brokersNotAlive.push(`broker ${brokerId} ${broker.state}`);
  }
  const partitionsOutOfSync: string[] = [];
  let partitionsTotal = 0;
  for (const topic of topics) {
    for (const partition of topic.partitions) {
      partitionsTotal += 1;
      const inSync =
        !partition.offline &&
        partition.leaderId >= 0 &&
        partition.replicas.every((replica) => partition.isr.includes(replica));
      if (!inSync) {
        partitionsOutOfSync.push(
          `${topic.name}-${partition.partition} (leader ${partition.leaderId}, replicas ` +
            `${partition.replicas.join(',')}, isr ${partition.isr.join(',') || 'none'})`,
        );
      }
    }
  }
  return {
    partitionsTotal,
    partitionsInSync: partitionsTotal - partitionsOutOfSync.length,
    brokersNotAlive,
    partitionsOutOfSync,
  };
}

/** What is still missing, in one line: the brokers, then the first few partitions. */
export function describeOutOfSync(report: SyncReport, partitionsShownMax = 5): string {
  const parts = [...report.brokersNotAlive];
  const outOfSync = report.partitionsOutOfSync;
  if (outOfSync.length > 0) {
    const shown = outOfSync.slice(0, partitionsShownMax).join(', ');
    const more =
      outOfSync.length > partitionsShownMax
        ? `, and ${outOfSync.length - partitionsShownMax} more`
        : '';
    parts.push(
      `${outOfSync.length} of ${report.partitionsTotal} partitions out of sync: ${shown}${more}`,
    );
  }
  return parts.join('; ');
}

export type ReadinessOutcome =
  | { readonly kind: 'in-sync'; readonly report: SyncReport }
  | { readonly kind: 'timed-out'; readonly report?: SyncReport; readonly lastError?: unknown }
  | { readonly kind: 'aborted' };

/** How often the cluster is asked again while it is not in sync. */
const pollIntervalMs = 200;

/** Polls the gateway until the cluster is in sync, the time is up, or `signal` aborts. */
export async function waitUntilInSync(options: {
  readonly gatewayAddress: string;
  /** ssl: TLS to the gateway (spool dev --secure), with the client certificate. */
  readonly ssl?: SpoolSslOptions;
  readonly brokerIds: readonly number[];
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
}): Promise<ReadinessOutcome> {
  const deadlineMs = Date.now() + options.timeoutMs;
  const spool = new Spool({
    brokers: [options.gatewayAddress],
    clientId: 'spool-dev',
    logLevel: 'silent',
    ...(options.ssl === undefined ? {} : { ssl: options.ssl }),
  });
  const admin = spool.admin();
  let report: SyncReport | undefined;
  let lastError: unknown;
  try {
    while (!options.signal.aborted) {
      const remainingMs = deadlineMs - Date.now();
      if (remainingMs <= 0) return { kind: 'timed-out', report, lastError };
      try {
        // One look may not outlast the deadline, whatever the gateway does.
        const seen = await withinMs(lookAtCluster(admin, options.brokerIds), remainingMs);
        if (seen !== undefined) {
          report = seen;
          lastError = undefined;
          if (isInSync(report)) return { kind: 'in-sync', report };
        }
      } catch (error) {
        // The gateway may not know the controller yet: not ready, not a failure.
        lastError = error;
      }
      await sleep(pollIntervalMs);
    }
    return { kind: 'aborted' };
  } finally {
    await admin.close().catch(() => {});
  }
}

/** The promise's value, or undefined once `timeoutMs` passed; no timer outlives the race. */
async function withinMs<T>(promise: Promise<T>, timeoutMs: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), timeoutMs);
  });
  try {
    return await Promise.race([promise, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

async function lookAtCluster(admin: Admin, brokerIds: readonly number[]): Promise<SyncReport> {
  const cluster = await admin.describeCluster();
  const names = await admin.listTopics({ includeInternal: true });
  const topics = names.length === 0 ? [] : await admin.describeTopics({ topics: names });
  return syncReport(cluster, topics, brokerIds);
}

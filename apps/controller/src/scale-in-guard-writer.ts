/**
 * The active controller's half of the chart's scale-in guard: it keeps the guard's ConfigMap
 * (scale-in-guard.ts says what it holds) in step with the cluster, so the admission policy can
 * refuse a StatefulSet scale-in that would remove a broker holding replicas. Off unless the
 * controller is told the ConfigMap and the StatefulSet (scale.in.guard.config.map and
 * scale.in.guard.stateful.set, set by the chart when storageNode.scaleInGuard.enabled).
 *
 *   1. While this controller is active it follows its view: a change of brokers or partitions
 *      marks the ConfigMap stale, and at most once per `checkIntervalMs` it is written.
 *   2. A write reads the ConfigMap first. One written for this cluster from a newer metadata
 *      revision than this view's was written by a controller that took over since: it is left
 *      alone, so a deposed controller never puts back an older answer (a new cluster id, as after
 *      etcd's data was lost, starts revisions anew and is always written). Data already equal is
 *      not written again.
 *   3. The write is a merge patch of the data alone, carrying the resourceVersion it read, so a
 *      concurrent write makes it fail with a conflict (409) and it starts again from 2. Helm's
 *      labels and annotations are never touched.
 *   4. Failures are retried `attemptsMax` times with backoff; then, or at once for a missing
 *      ConfigMap or a refused permission (404, 403: retrying will not help), it is logged as an
 *      error and tried again on the next change or refresh. Every `refreshIntervalMs` the
 *      ConfigMap is read again and rewritten if someone changed it.
 *   5. Losing leadership stops all of it; a write in flight finds the view gone and stops.
 */
import { backoffMs, sleep, type Logger } from '@spool/common';
import type { ClusterState } from './cluster-state';
import { scaleInGuardData, scaleInGuardState } from './scale-in-guard';

/**
 * The guard's ConfigMap, and the storage StatefulSet it speaks of, as far as the writer needs them
 * (the Kubernetes API, or a test's fake).
 */
export interface GuardConfigMap {
  /** Its name, for log lines ("namespace/name"). */
  readonly name: string;
  /** The storage StatefulSet's uid (its name is the chart's; a new install has a new uid). */
  readStatefulSetUid(): Promise<string>;
  read(): Promise<{
    readonly data: Readonly<Record<string, string>>;
    readonly resourceVersion: string;
  }>;
  /** Merges `data` into its data if its resourceVersion is still `resourceVersion` (else 409). */
  patchData(data: Readonly<Record<string, string>>, resourceVersion: string): Promise<void>;
}

export interface ScaleInGuardWriterOptions {
  /** How often a stale ConfigMap is looked at: writes are at most this frequent. */
  readonly checkIntervalMs: number;
  /** How often the ConfigMap is read and corrected even when nothing changed here. */
  readonly refreshIntervalMs: number;
  /** Attempts of one write before it waits for the next change or refresh. */
  readonly attemptsMax: number;
  /** The first retry's backoff (it doubles up to backoffMaxMs). */
  readonly backoffInitialMs: number;
  readonly backoffMaxMs: number;
}

export const scaleInGuardWriterDefaults: ScaleInGuardWriterOptions = {
  // A second: a decommission's last move shows as REMOVABLE and as removable to the guard alike.
  checkIntervalMs: 1_000,
  refreshIntervalMs: 30_000,
  attemptsMax: 5,
  backoffInitialMs: 200,
  backoffMaxMs: 5_000,
};

/** HTTP statuses of the Kubernetes API that retrying cannot change. */
const permanentStatuses = new Set([401, 403, 404, 422]);
const conflictStatus = 409;

export class ScaleInGuardWriter {
  private view: { readonly state: ClusterState; readonly unsubscribe: () => void } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stale = false;
  private lastCheckMs = 0;
  private writing: Promise<void> | undefined;

  constructor(
    private readonly configMap: GuardConfigMap,
    private readonly logger: Logger,
    private readonly options: ScaleInGuardWriterOptions = scaleInGuardWriterDefaults,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Follows this controller's view while it is active (rule 1); undefined stops (rule 5). */
  follow(state: ClusterState | undefined): void {
    if (this.view?.state === state) return;
    this.view?.unsubscribe();
    this.view = undefined;
    clearInterval(this.timer);
    this.timer = undefined;
    if (state === undefined) return;
    const unsubscribe = state.onDelta((delta) => {
      if (
        delta.changedBrokers.size > 0 ||
        delta.deletedBrokers.size > 0 ||
        delta.changedTopics.size > 0 ||
        delta.deletedTopics.size > 0
      ) {
        this.stale = true;
      }
    });
    this.view = { state, unsubscribe };
    this.stale = true;
    this.timer = setInterval(() => void this.check(), this.options.checkIntervalMs);
    this.timer.unref();
    void this.check();
  }

  /** Writes when stale or due for a refresh, unless a write is in flight; resolves once done. */
  check(): Promise<void> {
    if (this.writing !== undefined || this.view === undefined)
      return this.writing ?? Promise.resolve();
    const refreshDue = this.clock() - this.lastCheckMs >= this.options.refreshIntervalMs;
    if (!this.stale && !refreshDue) return Promise.resolve();
    this.stale = false;
    this.lastCheckMs = this.clock();
    this.writing = this.write(this.view.state).finally(() => {
      this.writing = undefined;
    });
    return this.writing;
  }

  private async write(state: ClusterState): Promise<void> {
    for (let attempt = 1; attempt <= this.options.attemptsMax; attempt++) {
      if (this.view?.state !== state) return;
      const revision = state.revision;
      const guard = scaleInGuardState(
        [...state.brokers.values()].map((broker) => ({
          brokerId: broker.record.brokerId,
          decommissioned: broker.record.decommissioned === true,
        })),
        [...state.allPartitions()].map((partition) => partition.record.replicas),
      );
      const clusterId = state.cluster?.record.clusterId ?? '';
      try {
        const statefulSetUid = await this.configMap.readStatefulSetUid();
        const data = scaleInGuardData(guard, {
          statefulSetUid,
          clusterId,
          metadataRevision: revision,
        });
        const current = await this.configMap.read();
        const writtenRevision = parseRevision(current.data['metadataRevision']);
        const sameCluster = current.data['clusterId'] === clusterId;
        if (sameCluster && writtenRevision !== undefined && writtenRevision > revision) return;
        if (
          current.data['removableFromOrdinal'] === data['removableFromOrdinal'] &&
          current.data['brokersNotRemovable'] === data['brokersNotRemovable'] &&
          current.data['statefulSetUid'] === data['statefulSetUid']
        ) {
          return;
        }
        if (this.view?.state !== state) return;
        await this.configMap.patchData(data, current.resourceVersion);
        this.logger.info(
          { ...data, configMap: this.configMap.name },
          `scale-in guard: the storage StatefulSet may scale in to ${guard.removableFromOrdinal} replicas`,
        );
        return;
      } catch (error) {
        const status = statusOf(error);
        if (status !== undefined && permanentStatuses.has(status)) {
          this.logger.error(
            { err: error, configMap: this.configMap.name, status },
            `scale-in guard: cannot write ConfigMap ${this.configMap.name}` +
              (status === 404 ? ' (it or the storage StatefulSet does not exist)' : '') +
              (status === 403
                ? ' (the service account may not get and patch it, or get the StatefulSet)'
                : '') +
              `; trying again in ${this.options.refreshIntervalMs} ms`,
          );
          return;
        }
        if (status === conflictStatus) continue;
        if (attempt === this.options.attemptsMax) {
          this.logger.error(
            { err: error, configMap: this.configMap.name, attempts: attempt },
            `scale-in guard: writing ConfigMap ${this.configMap.name} failed ${attempt} times; ` +
              `trying again on the next change or in ${this.options.refreshIntervalMs} ms`,
          );
          return;
        }
        this.logger.warn(
          { err: error, configMap: this.configMap.name, attempt },
          'scale-in guard: writing the ConfigMap failed; retrying',
        );
        await sleep(backoffMs(attempt, this.options));
      }
    }
    this.logger.error(
      { configMap: this.configMap.name, attempts: this.options.attemptsMax },
      `scale-in guard: ConfigMap ${this.configMap.name} changed under every write; trying again later`,
    );
  }

  /** Stops following and waits for a write in flight. */
  async stop(): Promise<void> {
    this.follow(undefined);
    await this.writing;
  }
}

function parseRevision(value: string | undefined): bigint | undefined {
  if (value === undefined || !/^\d+$/.test(value)) return undefined;
  return BigInt(value);
}

/** The HTTP status of a Kubernetes API error (client-node's ApiException has it as `code`). */
function statusOf(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** The ConfigMap through the Kubernetes API, with the pod's service account. */
export async function kubernetesGuardConfigMap(
  namespace: string,
  name: string,
  statefulSetName: string,
  requestTimeoutMs: number,
): Promise<GuardConfigMap> {
  // client-node is an ES module, and only controllers that run the guard load it.
  const kubernetes = await import('@kubernetes/client-node');
  const kubeConfig = new kubernetes.KubeConfig();
  kubeConfig.loadFromCluster();
  const api = kubeConfig.makeApiClient(kubernetes.CoreV1Api);
  const apps = kubeConfig.makeApiClient(kubernetes.AppsV1Api);
  const mergePatch = kubernetes.setHeaderOptions(
    'Content-Type',
    kubernetes.PatchStrategy.MergePatch,
  );
  return {
    name: `${namespace}/${name}`,
    readStatefulSetUid: async () => {
      const statefulSet = await withTimeout(
        apps.readNamespacedStatefulSet({ name: statefulSetName, namespace }),
        requestTimeoutMs,
      );
      return statefulSet.metadata?.uid ?? '';
    },
    read: async () => {
      const configMap = await withTimeout(
        api.readNamespacedConfigMap({ name, namespace }),
        requestTimeoutMs,
      );
      return {
        data: configMap.data ?? {},
        resourceVersion: configMap.metadata?.resourceVersion ?? '',
      };
    },
    patchData: async (data, resourceVersion) => {
      await withTimeout(
        api.patchNamespacedConfigMap(
          { name, namespace, body: { metadata: { resourceVersion }, data } },
          mergePatch,
        ),
        requestTimeoutMs,
      );
    },
  };
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer from the Kubernetes API within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

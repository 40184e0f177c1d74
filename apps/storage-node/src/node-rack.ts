import { backoffMs, ConfigError, sleep, SpoolError, type Logger } from '@spool/common';

/**
 * Rack awareness on Kubernetes: a storage node's rack (Kafka's broker.rack) is a label of the
 * Kubernetes node its pod runs on, usually `topology.kubernetes.io/zone`. The pod knows its node's
 * name from the downward API (spec.nodeName) and reads the node object through the Kubernetes API
 * with its service account (the chart binds it to a ClusterRole that may `get nodes`). The rack
 * is read once at start-up: a pod never moves to another node while it runs.
 */
export interface NodeRackOptions {
  /** The Kubernetes node this pod runs on. */
  readonly nodeName: string;
  /** The node label whose value is the rack. */
  readonly labelKey: string;
  /** Prepended to the service account's token and CA paths; '' in a pod, a folder in tests. */
  readonly serviceAccountPathPrefix?: string;
  /** API calls tried before start-up fails; the API server may be briefly unreachable. */
  readonly attempts?: number;
}

/** Start-up tries the API this often before giving up (about 10 s with the default backoff). */
const nodeLookupAttemptsDefault = 6;
/** One API call gives up after this, so a hung API server cannot hang start-up. */
const nodeLookupTimeoutMs = 5_000;

/** A node's labels as the Kubernetes API returns them (only what is read here). */
interface KubernetesNode {
  readonly metadata?: { readonly labels?: Readonly<Record<string, string>> };
}

export class NodeRackError extends SpoolError {
  constructor(message: string, cause?: unknown) {
    super('RACK_LOOKUP_FAILED', message, { retriable: false, cause });
    this.name = 'NodeRackError';
  }
}

/**
 * Reads the rack from the node's label with the in-cluster configuration (the service account's
 * token and CA, and KUBERNETES_SERVICE_HOST/PORT). Fails with an error naming the node and the
 * label when the node has no such label: a storage node must not silently register without a
 * rack when rack awareness was asked for, or replicas could all land in one zone.
 */
export async function rackFromNodeLabel(options: NodeRackOptions, logger: Logger): Promise<string> {
  if (options.nodeName === '') {
    throw new ConfigError(
      'setting rack.from.node.label needs node.name (SPOOL_NODE_NAME, from the downward API ' +
        'field spec.nodeName)',
    );
  }
  // client-node is an ES module, and only nodes that use rack awareness load it.
  const kubernetes = await import('@kubernetes/client-node');
  const kubeConfig = new kubernetes.KubeConfig();
  kubeConfig.loadFromCluster(options.serviceAccountPathPrefix ?? '');
  const api = kubeConfig.makeApiClient(kubernetes.CoreV1Api);
  const attempts = options.attempts ?? nodeLookupAttemptsDefault;

  let node: KubernetesNode | undefined;
  for (let attempt = 1; node === undefined; attempt++) {
    try {
      node = await withTimeout(api.readNode({ name: options.nodeName }), nodeLookupTimeoutMs);
    } catch (error) {
      const status = (error as { code?: unknown }).code;
      // 403 and 404 will not change by retrying: wrong RBAC or a wrong node name.
      if (status === 403 || status === 404 || attempt >= attempts) {
        throw new NodeRackError(
          `cannot read Kubernetes node "${options.nodeName}" for its label ` +
            `${options.labelKey} (setting rack.from.node.label)` +
            (status === 403 ? ': the service account may not get nodes' : '') +
            `: ${(error as Error).message}`,
          error,
        );
      }
      logger.warn({ err: error, attempt }, 'reading the Kubernetes node failed; retrying');
      await sleep(backoffMs(attempt));
    }
  }
  const rack = node.metadata?.labels?.[options.labelKey];
  if (rack === undefined || rack === '') {
    throw new NodeRackError(
      `Kubernetes node "${options.nodeName}" has no label ${options.labelKey} ` +
        `(setting rack.from.node.label), so this storage node has no rack`,
    );
  }
  return rack;
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

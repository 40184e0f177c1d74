import type { Container, KubernetesObject } from './helm-chart';
import { find, matchesSelector, podLabelsOf, podSpecOf } from './helm-chart';

/**
 * What Kubernetes would give the containers of a rendered chart: each pod's identity (name,
 * namespace, node, IP), its environment with the downward API filled in and `$(VAR)` references
 * expanded, and the resolution of an in-cluster address (`<service>.<namespace>.svc.<domain>` or
 * `<pod>.<headless service>...`, with a Service port) to the workload and container port behind
 * it. The chart tests check every address resolves; the image-contents test rewrites each to
 * the loopback port of the process that plays that pod.
 */
export interface PodIdentity {
  readonly workload: KubernetesObject;
  readonly ordinal: number;
  readonly name: string;
  readonly namespace: string;
  readonly nodeName: string;
  readonly podIp: string;
}

export function replicasOf(workload: KubernetesObject): number {
  if (workload.kind === 'Pod') return 1;
  return (workload['spec'] as { replicas?: number }).replicas ?? 1;
}

/** StatefulSet pods are <name>-<ordinal>; other pods get a made-up but stable name. */
export function podIdentity(
  workload: KubernetesObject,
  ordinal: number,
  namespace: string,
  podIp = '127.0.0.1',
): PodIdentity {
  const base = workload.metadata.name;
  const name =
    workload.kind === 'StatefulSet'
      ? `${base}-${ordinal}`
      : workload.kind === 'Pod'
        ? base
        : `${base}-5d8f9c-${ordinal}`;
  return { workload, ordinal, name, namespace, nodeName: `node-${ordinal}`, podIp };
}

const fieldValues: Readonly<Record<string, (pod: PodIdentity) => string>> = {
  'metadata.name': (pod) => pod.name,
  'metadata.namespace': (pod) => pod.namespace,
  'spec.nodeName': (pod) => pod.nodeName,
  'status.podIP': (pod) => pod.podIp,
};

/** The container's environment as Kubernetes sets it, in order, `$(VAR)` expanded. */
export function containerEnvironment(container: Container, pod: PodIdentity): Map<string, string> {
  const environment = new Map<string, string>();
  for (const variable of container.env ?? []) {
    let value: string;
    const secretKey = variable.valueFrom?.secretKeyRef;
    if (secretKey !== undefined) {
      // A Secret's value is not in the render; no address is ever taken from one.
      environment.set(variable.name, `<secret ${secretKey.name}/${secretKey.key}>`);
      continue;
    }
    if (variable.valueFrom !== undefined) {
      const fieldPath = variable.valueFrom.fieldRef?.fieldPath;
      const field = fieldPath === undefined ? undefined : fieldValues[fieldPath];
      if (field === undefined) {
        throw new Error(
          `${variable.name}: unsupported valueFrom ${JSON.stringify(variable.valueFrom)}`,
        );
      }
      value = field(pod);
    } else {
      // Kubernetes expands $(NAME) of variables defined earlier in the list; others stay as is.
      value = (variable.value ?? '').replace(
        /\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g,
        (whole, name: string) => environment.get(name) ?? whole,
      );
    }
    environment.set(variable.name, value);
  }
  return environment;
}

export interface ResolvedAddress {
  readonly service: KubernetesObject;
  readonly workload: KubernetesObject;
  /** The pod named in the address (`<pod>.<headless service>`), if one is. */
  readonly ordinal: number | undefined;
  /** The name of the container port the Service port leads to (undefined without a port). */
  readonly containerPortName: string | undefined;
}

/** Matches `<host>.<namespace>.svc.<domain>` with an optional `:port`. */
export function clusterAddressPattern(namespace: string, domain = 'cluster.local'): RegExp {
  const escape = (text: string) => text.replace(/\./g, '\\.');
  return new RegExp(
    `([a-z0-9.-]+)\\.${escape(namespace)}\\.svc\\.${escape(domain)}(?::(\\d+))?`,
    'g',
  );
}

/** Resolves `<service>` or `<pod>.<service>` and a port against the rendered objects. */
export function resolveClusterAddress(
  objects: readonly KubernetesObject[],
  host: string,
  port: number | undefined,
): ResolvedAddress {
  const parts = host.split('.');
  if (parts.length > 2) throw new Error(`${host}: not <service> or <pod>.<service>`);
  const serviceName = parts[parts.length - 1]!;
  const podName = parts.length === 2 ? parts[0] : undefined;
  const service = find([...objects], 'Service', serviceName);
  const spec = service['spec'] as {
    clusterIP?: string;
    selector: Record<string, string>;
    ports: Array<{ name?: string; port: number; targetPort?: string | number }>;
  };
  const workloads = objects.filter(
    (object) =>
      (object.kind === 'StatefulSet' || object.kind === 'Deployment') &&
      matchesSelector(podLabelsOf(object), spec.selector),
  );
  if (workloads.length !== 1) {
    throw new Error(`Service ${serviceName} selects ${workloads.length} workloads, expected 1`);
  }
  const workload = workloads[0]!;
  let ordinal: number | undefined;
  if (podName !== undefined) {
    if (spec.clusterIP !== 'None') throw new Error(`${host}: ${serviceName} is not headless`);
    if (
      workload.kind !== 'StatefulSet' ||
      (workload['spec'] as { serviceName: string }).serviceName !== serviceName
    ) {
      throw new Error(`${host}: ${serviceName} is not the governing Service of a StatefulSet`);
    }
    const match = new RegExp(`^${workload.metadata.name}-(\\d+)$`).exec(podName);
    ordinal = match === null ? undefined : Number(match[1]);
    if (ordinal === undefined || ordinal >= replicasOf(workload)) {
      throw new Error(`${host}: no pod ${podName} in StatefulSet ${workload.metadata.name}`);
    }
  }
  let containerPortName: string | undefined;
  if (port !== undefined) {
    const servicePort = spec.ports.find((candidate) => candidate.port === port);
    if (servicePort === undefined)
      throw new Error(`${host}:${port}: Service ${serviceName} has no port ${port}`);
    const target = servicePort.targetPort ?? servicePort.port;
    const containerPort = podSpecOf(workload)!
      .containers.flatMap((container) => container.ports ?? [])
      .find((candidate) =>
        typeof target === 'string' ? candidate.name === target : candidate.containerPort === target,
      );
    if (containerPort === undefined) {
      throw new Error(
        `${host}:${port}: target port ${target} is no container port of ${workload.metadata.name}`,
      );
    }
    containerPortName = containerPort.name;
  }
  return { service, workload, ordinal, containerPortName };
}

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { workspaceRoot } from './service-process';

/**
 * Renders helm/spool with a real helm (test/support/ensure-helm.sh builds the pinned version
 * when it is missing) and returns the objects, so tests check what `helm install` would send.
 */
export const chartPath = path.join(workspaceRoot, 'helm', 'spool');
export const releaseName = 'rel';
export const releaseNamespace = 'spool-test';
/** helm built with `go install` has no Kubernetes version stamped in; say which one to target. */
export const kubeVersion = '1.33.0';
/** The first build of helm compiles it from source: minutes on a small machine. */
export const helmInstallTimeoutMs = 20 * 60_000;

export interface KubernetesObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [field: string]: unknown;
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    fieldRef?: { fieldPath: string };
    secretKeyRef?: { name: string; key: string };
  };
}

export interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  ports?: Array<{ name?: string; containerPort: number }>;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  volumeMounts?: Array<{ name: string; mountPath: string }>;
}

export interface PodSpec {
  containers: Container[];
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  enableServiceLinks?: boolean;
  terminationGracePeriodSeconds?: number;
  volumes?: Array<{
    name: string;
    emptyDir?: object;
    secret?: {
      secretName: string;
      defaultMode?: number;
      items?: Array<{ key: string; path?: string }>;
    };
  }>;
  affinity?: Record<string, unknown>;
  topologySpreadConstraints?: unknown[];
}

let helmPath: string | undefined;

/** The pinned helm binary, built on first use. */
export function helmBinary(): string {
  helmPath ??= execFileSync('bash', [path.join(workspaceRoot, 'test/support/ensure-helm.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: helmInstallTimeoutMs,
  }).trim();
  return helmPath;
}

export function runHelm(args: readonly string[]): {
  status: number;
  stdout: string;
  stderr: string;
} {
  const result = spawnSync(helmBinary(), [...args], { encoding: 'utf8', timeout: 60_000 });
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/** `helm template` with these values; throws with helm's message when rendering fails. */
export function renderChart(
  values: Record<string, unknown> = {},
  options: { chart?: string; apiVersions?: readonly string[] } = {},
): KubernetesObject[] {
  const result = templateChart(values, options);
  if (result.status !== 0) throw new Error(`helm template failed: ${result.stderr}`);
  return parseObjects(result.stdout);
}

/** `helm template` with these values, for tests that expect it to fail. */
export function templateChart(
  values: Record<string, unknown>,
  options: { chart?: string; kubeVersion?: string; apiVersions?: readonly string[] } = {},
): { status: number; stdout: string; stderr: string } {
  const folder = mkdtempSync(path.join(tmpdir(), 'spool-helm-values-'));
  try {
    const valuesFile = path.join(folder, 'values.json');
    writeFileSync(valuesFile, JSON.stringify(values));
    return runHelm([
      'template',
      releaseName,
      options.chart ?? chartPath,
      '--namespace',
      releaseNamespace,
      '--kube-version',
      options.kubeVersion ?? kubeVersion,
      '--values',
      valuesFile,
      // API groups the cluster would serve beyond the built-in ones (cert-manager.io/v1).
      ...(options.apiVersions ?? []).flatMap((apiVersion) => ['--api-versions', apiVersion]),
    ]);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

export function parseObjects(text: string): KubernetesObject[] {
  return parseAllDocuments(text)
    .map((document) => {
      if (document.errors.length > 0)
        throw new Error(`rendered YAML: ${document.errors[0]!.message}`);
      return document.toJS() as KubernetesObject | null;
    })
    .filter((object): object is KubernetesObject => object !== null);
}

/** The pod template of a workload, or the spec of a Pod. */
export function podSpecOf(object: KubernetesObject): PodSpec | undefined {
  if (object.kind === 'Pod') return object['spec'] as PodSpec;
  if (object.kind === 'Deployment' || object.kind === 'StatefulSet') {
    return (object['spec'] as { template: { spec: PodSpec } }).template.spec;
  }
  return undefined;
}

/** The labels of a workload's pods. */
export function podLabelsOf(object: KubernetesObject): Record<string, string> {
  if (object.kind === 'Pod') return object.metadata.labels ?? {};
  return (object['spec'] as { template: { metadata: { labels: Record<string, string> } } }).template
    .metadata.labels;
}

export function find(objects: KubernetesObject[], kind: string, name: string): KubernetesObject {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  if (found === undefined) throw new Error(`no ${kind} ${name} in the render`);
  return found;
}

export function matchesSelector(
  labels: Record<string, string>,
  selector: Record<string, string>,
): boolean {
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}

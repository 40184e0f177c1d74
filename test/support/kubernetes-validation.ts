import { Certificate } from '@kubernetes-models/cert-manager/cert-manager.io/v1/Certificate';
import { Issuer } from '@kubernetes-models/cert-manager/cert-manager.io/v1/Issuer';
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { ValidatingAdmissionPolicy } from 'kubernetes-models/admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy';
import { ValidatingAdmissionPolicyBinding } from 'kubernetes-models/admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Pod } from 'kubernetes-models/v1/Pod';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { execFileSync, spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { helmInstallTimeoutMs, type KubernetesObject } from './helm-chart';
import { workspaceRoot } from './service-process';

/**
 * Validates rendered objects against the Kubernetes API's OpenAPI schemas, as compiled into the
 * `kubernetes-models` package (and the Prometheus Operator's CRD schemas from
 * `@kubernetes-models/prometheus-operator`): required fields, types, formats and enums. Those
 * schemas accept fields they do not know; strictDecodeProblems below catches those.
 *
 * An object of a kind not in this table fails: every kind the chart renders must be validated.
 */
type Validator = (object: KubernetesObject) => void;

function validatorOf(Model: new (data: never) => { validate(): void }): Validator {
  return (object) => new Model(object as never).validate();
}

const validators: Readonly<Record<string, Validator>> = {
  'apps/v1/Deployment': validatorOf(Deployment),
  'apps/v1/StatefulSet': validatorOf(StatefulSet),
  'policy/v1/PodDisruptionBudget': validatorOf(PodDisruptionBudget),
  'rbac.authorization.k8s.io/v1/ClusterRole': validatorOf(ClusterRole),
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': validatorOf(ClusterRoleBinding),
  'rbac.authorization.k8s.io/v1/Role': validatorOf(Role),
  'rbac.authorization.k8s.io/v1/RoleBinding': validatorOf(RoleBinding),
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy':
    validatorOf(ValidatingAdmissionPolicy),
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding': validatorOf(
    ValidatingAdmissionPolicyBinding,
  ),
  'batch/v1/Job': validatorOf(Job),
  'v1/ConfigMap': validatorOf(ConfigMap),
  'v1/Secret': validatorOf(Secret),
  'v1/Pod': validatorOf(Pod),
  'v1/Service': validatorOf(Service),
  'v1/ServiceAccount': validatorOf(ServiceAccount),
  'monitoring.coreos.com/v1/ServiceMonitor': validatorOf(ServiceMonitor),
  'monitoring.coreos.com/v1/PrometheusRule': validatorOf(PrometheusRule),
  'cert-manager.io/v1/Issuer': validatorOf(Issuer),
  'cert-manager.io/v1/Certificate': validatorOf(Certificate),
};

/** Every problem found, as "Kind/name: message"; empty when all objects are valid. */
export function validateObjects(objects: readonly KubernetesObject[]): string[] {
  const problems: string[] = [];
  for (const object of objects) {
    const where = `${object.kind}/${object.metadata?.name}`;
    const validate = validators[`${object.apiVersion}/${object.kind}`];
    if (validate === undefined) {
      problems.push(`${where}: no schema for ${object.apiVersion} ${object.kind}`);
      continue;
    }
    try {
      validate(object);
    } catch (error) {
      problems.push(`${where}: ${(error as Error).message}`);
    }
  }
  return problems;
}

let strictCheckerPath: string | undefined;

/**
 * Decodes every object strictly into the Kubernetes API's Go types (test/support/k8s-strict), as
 * the API server's strict field validation would: unlike the schemas above, it reports fields
 * the type does not have, so a misspelt key in a template fails. Returns the problems found.
 */
export function strictDecodeProblems(objects: readonly KubernetesObject[]): string[] {
  strictCheckerPath ??= execFileSync(
    'bash',
    [path.join(workspaceRoot, 'test/support/ensure-k8s-strict.sh')],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: helmInstallTimeoutMs },
  ).trim();
  const result = spawnSync(strictCheckerPath, [], {
    input: objects.map((object) => JSON.stringify(object)).join('\n---\n'),
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (result.status === 2 || result.status === null) {
    throw new Error(`k8s-strict failed (${result.status}): ${result.stdout}${result.stderr}`);
  }
  return result.stdout.split('\n').filter((line) => line !== '');
}

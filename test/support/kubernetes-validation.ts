import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Pod } from 'kubernetes-models/v1/Pod';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import type { KubernetesObject } from './helm-chart';

/**
 * Validates rendered objects against the Kubernetes API's OpenAPI schemas, as compiled into the
 * `kubernetes-models` package (and the Prometheus Operator's CRD schemas from
 * `@kubernetes-models/prometheus-operator`): required fields, types, formats and enums. Those
 * schemas, like the API server's, accept fields they do not know, so a misspelt field name in a
 * template is caught by the structural checks of the chart tests, not here.
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
  'v1/ConfigMap': validatorOf(ConfigMap),
  'v1/Pod': validatorOf(Pod),
  'v1/Service': validatorOf(Service),
  'v1/ServiceAccount': validatorOf(ServiceAccount),
  'monitoring.coreos.com/v1/ServiceMonitor': validatorOf(ServiceMonitor),
  'monitoring.coreos.com/v1/PrometheusRule': validatorOf(PrometheusRule),
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

// Proves helm/spool is a well-made stateful chart, with a real helm (built at a pinned version
// from the Go module proxy when missing): `helm lint` passes; the defaults and every variant
// (external etcd, persistence off, metrics on, rack awareness on, 5 storage nodes, hard
// anti-affinity with a LoadBalancer) render, and every object validates against the Kubernetes
// API schemas (kubernetes-models; Prometheus Operator CRDs included) and decodes strictly into
// the API's Go types (no unknown field). On each render: the
// storage StatefulSet has a volumeClaimTemplate and uses a headless Service, every Service port
// leads to a container port, every cluster address a container is given resolves to a Service
// (and pod) in the render with that port, each workload has a PDB, every container requests
// resources, and broker ids come from pod ordinals as the storage node derives them. Bad values
// (negative replicas, a typo'd key, a typo nested deep, a bad enum, too few controllers) are
// rejected by the schema, naming the value; the alert and dashboard copies match their sources;
// the scale-in guard's policy, binding, ConfigMap and Role render by default and not when off.
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { brokerIdFromHostname } from '@spool/storage-node';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  chartPath,
  find,
  helmBinary,
  helmInstallTimeoutMs,
  matchesSelector,
  podLabelsOf,
  podSpecOf,
  releaseNamespace,
  renderChart,
  runHelm,
  templateChart,
  type KubernetesObject,
  type PodSpec,
} from './support/helm-chart';
import {
  clusterAddressPattern,
  containerEnvironment,
  podIdentity,
  replicasOf,
  resolveClusterAddress,
} from './support/chart-pods';
import { strictDecodeProblems, validateObjects } from './support/kubernetes-validation';
import { workspaceRoot } from './support/service-process';

const externalEtcd = ['etcd-a.example.internal:2379', 'https://etcd-b.example.internal:2379'];

const variants: Record<string, Record<string, unknown>> = {
  defaults: {},
  'external etcd': { etcd: { external: { endpoints: externalEtcd } } },
  'persistence off': {
    storageNode: { persistence: { enabled: false } },
    etcd: { persistence: { enabled: false } },
  },
  'metrics on': { metrics: { serviceMonitor: { enabled: true, labels: { release: 'prom' } } } },
  'rack awareness on': { rackAwareness: { topologyKey: 'topology.kubernetes.io/zone' } },
  '5 storage nodes': { storageNode: { replicas: 5 } },
  'hard anti-affinity, LoadBalancer': {
    storageNode: { antiAffinity: 'hard' },
    gateway: { service: { type: 'LoadBalancer', loadBalancerSourceRanges: ['198.18.0.0/15'] } },
  },
  'tls and authentication off': { tls: { enabled: false }, authentication: { enabled: false } },
  'cert-manager': {},
};
/** API groups a variant's cluster serves beyond Kubernetes' own. */
const variantApiVersions: Record<string, readonly string[]> = {
  'cert-manager': ['cert-manager.io/v1'],
};

const renders = new Map<string, KubernetesObject[]>();
const storage = 'rel-spool-storage';

beforeAll(() => {
  helmBinary();
  for (const [name, values] of Object.entries(variants)) {
    renders.set(name, renderChart(values, { apiVersions: variantApiVersions[name] ?? [] }));
  }
}, helmInstallTimeoutMs);

const workloadsOf = (objects: KubernetesObject[]) =>
  objects.filter((object) => podSpecOf(object) !== undefined);

describe('helm/spool', () => {
  it('passes helm lint', () => {
    const result = runHelm(['lint', chartPath, '--strict', '--kube-version', '1.33.0']);
    expect(result.stderr + result.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(result.status).toBe(0);
  });

  describe.each(Object.keys(variants))('rendered with %s', (variant) => {
    const objects = () => renders.get(variant)!;

    it('validates against the Kubernetes API schemas', () => {
      expect(objects().length).toBeGreaterThan(10);
      expect(validateObjects(objects())).toEqual([]);
      // The validators are not vacuous: a wrong type in a copy is reported, naming the field.
      const broken = structuredClone(find(objects(), 'StatefulSet', storage));
      (broken['spec'] as { replicas: unknown }).replicas = 'three';
      expect(validateObjects([broken])).toEqual([
        `StatefulSet/${storage}: data/spec/replicas must be integer`,
      ]);
      // Strictly decoded into the API's Go types, no object has a field its type lacks.
      expect(strictDecodeProblems(objects())).toEqual([]);
      const misspelt = structuredClone(find(objects(), 'StatefulSet', storage));
      (misspelt['spec'] as Record<string, unknown>)['podManagmentPolicy'] = 'Parallel';
      expect(strictDecodeProblems([misspelt])).toEqual([
        expect.stringMatching(
          new RegExp(`^StatefulSet/${storage}: .*unknown field "podManagmentPolicy"`),
        ),
      ]);
    });

    it('gives storage nodes their own volume and a stable name through a headless Service', () => {
      const statefulSet = find(objects(), 'StatefulSet', storage);
      const spec = statefulSet['spec'] as {
        serviceName: string;
        podManagementPolicy: string;
        volumeClaimTemplates?: Array<{ metadata: { name: string } }>;
      };
      expect(spec.podManagementPolicy).toBe('Parallel');
      const headless = find(objects(), 'Service', spec.serviceName)['spec'] as {
        clusterIP: string;
        publishNotReadyAddresses: boolean;
        selector: Record<string, string>;
      };
      expect(headless.clusterIP).toBe('None');
      expect(headless.publishNotReadyAddresses).toBe(true);
      expect(matchesSelector(podLabelsOf(statefulSet), headless.selector)).toBe(true);
      const podSpec = podSpecOf(statefulSet)!;
      const mount = podSpec.containers[0]!.volumeMounts!.find((entry) => entry.name === 'data');
      expect(mount?.mountPath).toBe('/var/lib/spool');
      const volumeNames = podSpec.volumes?.map((volume) => volume.name) ?? [];
      const tlsVolumes = variant === 'tls and authentication off' ? [] : ['tls'];
      if (variant === 'persistence off') {
        expect(spec.volumeClaimTemplates).toBeUndefined();
        expect(podSpec.volumes?.[0]).toEqual({ name: 'data', emptyDir: {} });
        expect(volumeNames).toEqual(['data', ...tlsVolumes]);
      } else {
        expect(spec.volumeClaimTemplates?.map((claim) => claim.metadata.name)).toEqual(['data']);
        expect(volumeNames).toEqual(tlsVolumes);
      }
    });

    it('derives broker ids from pod ordinals and gives a controlled shutdown time to finish', () => {
      const statefulSet = find(objects(), 'StatefulSet', storage);
      const podSpec = podSpecOf(statefulSet)!;
      const container = podSpec.containers[0]!;
      expect(container.command).toEqual(['spool']);
      expect(container.args).toEqual(['storage-node']);
      const replicas = replicasOf(statefulSet);
      expect(replicas).toBe(variant === '5 storage nodes' ? 5 : 3);
      for (let ordinal = 0; ordinal < replicas; ordinal++) {
        const pod = podIdentity(statefulSet, ordinal, releaseNamespace);
        const environment = containerEnvironment(container, pod);
        expect(environment.get('SPOOL_BROKER_ID')).toBe('-1');
        expect(brokerIdFromHostname(environment.get('SPOOL_POD_NAME')!)).toBe(ordinal);
      }
      // Shutdown runs its steps, then drains for up to another timeout: twice the setting.
      const shutdownTimeoutMs = Number(
        container.env!.find((variable) => variable.name === 'SPOOL_SHUTDOWN_TIMEOUT_MS')!.value,
      );
      expect(shutdownTimeoutMs).toBeGreaterThanOrEqual(30_000);
      expect(podSpec.terminationGracePeriodSeconds! * 1000).toBeGreaterThan(2 * shutdownTimeoutMs);
      expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
    });

    it('leads every Service port to a container port of the pods it selects', () => {
      const services = objects().filter((object) => object.kind === 'Service');
      expect(services.length).toBeGreaterThanOrEqual(5);
      for (const service of services) {
        const spec = service['spec'] as {
          selector: Record<string, string>;
          ports: Array<{ name: string; port: number; targetPort: string | number }>;
        };
        const selected = workloadsOf(objects()).filter((object) =>
          matchesSelector(podLabelsOf(object), spec.selector),
        );
        expect(
          selected.length,
          `pods selected by Service ${service.metadata.name}`,
        ).toBeGreaterThan(0);
        for (const workload of selected) {
          const containers = podSpecOf(workload)!.containers;
          const containerPorts = containers.flatMap((c) => c.ports ?? []);
          // The gateway listens on brokerPortBase + N for storage broker N without declaring
          // those ports (the pod template would change with storageNode.replicas).
          const brokerPortBase = containers
            .flatMap((c) => c.env ?? [])
            .find((variable) => variable.name === 'SPOOL_KAFKA_BROKER_PORT_BASE')?.value;
          for (const port of spec.ports) {
            const target = port.targetPort ?? port.port;
            const brokerId = /^kafka-(\d+)$/.exec(port.name)?.[1];
            const matched =
              brokerId !== undefined && brokerPortBase !== undefined
                ? target === Number(brokerPortBase) + Number(brokerId)
                : containerPorts.some((candidate) =>
                    typeof target === 'string'
                      ? candidate.name === target
                      : candidate.containerPort === target,
                  );
            expect(
              matched,
              `Service ${service.metadata.name} port ${port.name} → ${target} in ${workload.metadata.name}`,
            ).toBe(true);
          }
        }
      }
    });

    it('gives containers only addresses that resolve to a Service in the render', () => {
      const pattern = clusterAddressPattern(releaseNamespace);
      let addresses = 0;
      for (const workload of workloadsOf(objects())) {
        for (const container of podSpecOf(workload)!.containers) {
          const environment = containerEnvironment(
            container,
            podIdentity(workload, 0, releaseNamespace, '198.18.1.3'),
          );
          for (const [name, value] of environment) {
            for (const match of value.matchAll(pattern)) {
              addresses++;
              const port = match[2] === undefined ? undefined : Number(match[2]);
              expect(
                () => resolveClusterAddress(objects(), match[1]!, port),
                `${workload.metadata.name} ${name}=${value}`,
              ).not.toThrow();
            }
            // Nothing that looks like a cluster address may escape the check above.
            const remainder = value.replace(pattern, '');
            expect(remainder, `${workload.metadata.name} ${name}`).not.toMatch(/\.svc\b/);
          }
        }
      }
      // Storage nodes, coordinators and gateways → controllers; controllers → etcd (unless
      // external); the test Pod → the gateway. Every component advertises its pod IP.
      expect(addresses).toBeGreaterThanOrEqual(variant === 'external etcd' ? 4 : 5);
      const controller = podSpecOf(find(objects(), 'Deployment', 'rel-spool-controller'))!;
      const endpoints = controller.containers[0]!.env!.find(
        (variable) => variable.name === 'SPOOL_ETCD_ENDPOINTS',
      )!.value!;
      if (variant === 'external etcd') {
        expect(endpoints).toBe(externalEtcd.join(','));
        expect(objects().filter((object) => object.metadata.name.includes('etcd'))).toEqual([]);
      } else {
        expect(endpoints.split(',')).toHaveLength(3);
      }
    });

    it('gives no pod the Service environment variables, which would fall in the SPOOL_ prefix', () => {
      // Kubernetes names them after the Services: the release "spool" would get
      // SPOOL_GATEWAY_PORT=tcp://..., read as a setting wherever one has that name.
      for (const workload of workloadsOf(objects())) {
        expect(podSpecOf(workload)!.enableServiceLinks, workload.metadata.name).toBe(false);
      }
    });

    it('protects every workload with a PodDisruptionBudget of one unavailable pod', () => {
      const budgets = objects().filter((object) => object.kind === 'PodDisruptionBudget');
      for (const workload of workloadsOf(objects()).filter((object) => object.kind !== 'Pod')) {
        const covering = budgets.filter((budget) =>
          matchesSelector(
            podLabelsOf(workload),
            (budget['spec'] as { selector: { matchLabels: Record<string, string> } }).selector
              .matchLabels,
          ),
        );
        expect(covering, `PDB of ${workload.metadata.name}`).toHaveLength(1);
        expect((covering[0]!['spec'] as { maxUnavailable: number }).maxUnavailable).toBe(1);
      }
      expect(find(objects(), 'Deployment', 'rel-spool-controller')['spec']).toMatchObject({
        replicas: 2,
      });
    });

    it('sets resource requests on every container', () => {
      for (const workload of workloadsOf(objects())) {
        for (const container of podSpecOf(workload)!.containers) {
          expect(container.resources?.requests?.['cpu'], container.name).toBeDefined();
          expect(container.resources?.requests?.['memory'], container.name).toBeDefined();
        }
      }
    });
  });

  it('runs with Prometheus scrape annotations, or a ServiceMonitor on the metrics Service', () => {
    const defaults = renders.get('defaults')!;
    const storagePods = find(defaults, 'StatefulSet', storage)['spec'] as {
      template: { metadata: { annotations: Record<string, string> } };
    };
    expect(storagePods.template.metadata.annotations).toMatchObject({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': '9192',
    });
    expect(defaults.some((object) => object.kind === 'ServiceMonitor')).toBe(false);

    const metrics = renders.get('metrics on')!;
    const monitor = find(metrics, 'ServiceMonitor', 'rel-spool');
    expect(monitor.metadata.labels?.['release']).toBe('prom');
    const monitorSpec = monitor['spec'] as {
      selector: { matchLabels: Record<string, string> };
      endpoints: Array<{ port: string }>;
    };
    const selected = metrics.filter(
      (object) =>
        object.kind === 'Service' &&
        matchesSelector(object.metadata.labels ?? {}, monitorSpec.selector.matchLabels),
    );
    expect(selected.map((service) => service.metadata.name)).toEqual(['rel-spool-metrics']);
    const metricsService = selected[0]!['spec'] as { ports: Array<{ name: string }> };
    expect(metricsService.ports.map((port) => port.name)).toContain(monitorSpec.endpoints[0]!.port);
  });

  it('lets storage nodes read their node label for rack awareness, and only then', () => {
    const rack = renders.get('rack awareness on')!;
    const podSpec = podSpecOf(find(rack, 'StatefulSet', storage))!;
    expect(podSpec.serviceAccountName).toBe('rel-spool');
    expect(podSpec.automountServiceAccountToken).toBe(true);
    find(rack, 'ServiceAccount', 'rel-spool');
    const role = find(rack, 'ClusterRole', 'spool-test-rel-spool-node-reader');
    expect(role['rules']).toEqual([{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }]);
    const binding = find(rack, 'ClusterRoleBinding', 'spool-test-rel-spool-node-reader');
    expect(binding['subjects']).toEqual([
      { kind: 'ServiceAccount', name: 'rel-spool', namespace: releaseNamespace },
    ]);
    const environment = containerEnvironment(
      podSpec.containers[0]!,
      podIdentity(find(rack, 'StatefulSet', storage), 1, releaseNamespace),
    );
    expect(environment.get('SPOOL_RACK_FROM_NODE_LABEL')).toBe('topology.kubernetes.io/zone');
    expect(environment.get('SPOOL_NODE_NAME')).toBe('node-1');

    const defaults = renders.get('defaults')!;
    expect(defaults.some((object) => object.kind === 'ClusterRole')).toBe(false);
    expect(podSpecOf(find(defaults, 'StatefulSet', storage))!.automountServiceAccountToken).toBe(
      false,
    );
  });

  it('spreads storage nodes softly by default and hard on request; exposes the gateway by value', () => {
    const affinity = (objects: KubernetesObject[]) =>
      podSpecOf(find(objects, 'StatefulSet', storage))!.affinity!['podAntiAffinity'] as Record<
        string,
        unknown
      >;
    expect(Object.keys(affinity(renders.get('defaults')!))).toEqual([
      'preferredDuringSchedulingIgnoredDuringExecution',
    ]);
    const hard = renders.get('hard anti-affinity, LoadBalancer')!;
    expect(Object.keys(affinity(hard))).toEqual(['requiredDuringSchedulingIgnoredDuringExecution']);
    expect(podSpecOf(find(hard, 'StatefulSet', storage))!.topologySpreadConstraints).toHaveLength(
      1,
    );
    expect(find(hard, 'Service', 'rel-spool-gateway')['spec']).toMatchObject({
      type: 'LoadBalancer',
      loadBalancerSourceRanges: ['198.18.0.0/15'],
    });
    expect(find(renders.get('defaults')!, 'Service', 'rel-spool-gateway')['spec']).toMatchObject({
      type: 'ClusterIP',
    });
  });

  it.each([
    [
      'negative replicas',
      { storageNode: { replicas: -1 } },
      /storageNode\/replicas|replicas.*minimum/,
    ],
    [
      'a typo in a key',
      { storageNode: { replica: 3 } },
      /additional propert(y|ies) .?replica.? not allowed/i,
    ],
    ['a typo in a nested key', { storageNode: { persistence: { sizee: '10Gi' } } }, /sizee/],
    ['a bad service type', { gateway: { service: { type: 'Ingress' } } }, /type/],
    ['one controller', { controller: { replicas: 1 } }, /controller\/replicas|minimum/],
    [
      'a string for a number',
      { coordinator: { replicas: 'two' } },
      /coordinator\/replicas|integer/,
    ],
    ['a bad anti-affinity', { gateway: { antiAffinity: 'sometimes' } }, /antiAffinity/],
    ['a string for autoBalance', { controller: { autoBalance: 'yes' } }, /autoBalance/],
    ['a typo in a toleration', { storageNode: { tolerations: [{ keyy: 'zone' }] } }, /keyy/],
    [
      'an etcd endpoint without a port',
      { etcd: { external: { endpoints: ['etcd'] } } },
      /endpoints/,
    ],
  ])('rejects %s with a message naming it', (_name, values, message) => {
    const result = templateChart(values);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(/values don't meet the specifications of the schema/);
    expect(result.stderr).toMatch(message);
  });

  it('turns the auto-balancer on only when controller.autoBalance is set', () => {
    const autoBalanceOf = (values: Record<string, unknown>): string | undefined =>
      podSpecOf(
        find(renderChart(values), 'Deployment', 'rel-spool-controller'),
      )!.containers[0]!.env!.find((variable) => variable.name === 'SPOOL_AUTO_BALANCE')?.value;
    expect(autoBalanceOf({})).toBe('false');
    expect(autoBalanceOf({ controller: { autoBalance: true } })).toBe('true');
  });

  it('guards the storage StatefulSet against scale-in with a policy the active controller feeds', () => {
    const defaults = renders.get('defaults')!;
    const configMap = find(defaults, 'ConfigMap', 'rel-spool-storage-scale-in');
    // No data: the controller writes it, and an upgrade must not put it back to the chart's.
    expect(configMap['data']).toBeUndefined();
    const policyName = 'spool-test-rel-spool-storage-scale-in';
    const policy = find(defaults, 'ValidatingAdmissionPolicy', policyName)['spec'] as {
      paramKind: unknown;
      matchConstraints: { resourceRules: { resources: string[]; operations: string[] }[] };
      validations: { expression: string; messageExpression: string }[];
    };
    expect(policy.paramKind).toEqual({ apiVersion: 'v1', kind: 'ConfigMap' });
    expect(policy.matchConstraints.resourceRules[0]).toMatchObject({
      resources: ['statefulsets', 'statefulsets/scale'],
      operations: ['UPDATE'],
    });
    expect(policy.validations[0]!.expression).toContain('params.data.removableFromOrdinal');
    // The answer counts only for the StatefulSet it was written for.
    expect(JSON.stringify(policy)).toContain('params.data.statefulSetUid == object.metadata.uid');
    expect(policy.validations[0]!.messageExpression).toContain("'spool broker decommission '");
    const binding = find(defaults, 'ValidatingAdmissionPolicyBinding', policyName)['spec'] as {
      policyName: string;
      paramRef: Record<string, string>;
      matchResources: { resourceRules: { resourceNames: string[] }[] };
    };
    expect(binding.policyName).toBe(policyName);
    expect(binding.paramRef).toMatchObject({
      name: 'rel-spool-storage-scale-in',
      namespace: releaseNamespace,
      parameterNotFoundAction: 'Deny',
    });
    expect(binding.matchResources.resourceRules[0]!.resourceNames).toEqual([storage]);
    // The controller may get and patch that ConfigMap alone, with its mounted token.
    const role = find(defaults, 'Role', 'rel-spool-scale-in-guard');
    expect(role['rules']).toEqual([
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['rel-spool-storage-scale-in'],
        verbs: ['get', 'patch'],
      },
      {
        apiGroups: ['apps'],
        resources: ['statefulsets'],
        resourceNames: [storage],
        verbs: ['get'],
      },
    ]);
    expect(find(defaults, 'RoleBinding', 'rel-spool-scale-in-guard')['subjects']).toEqual([
      { kind: 'ServiceAccount', name: 'rel-spool', namespace: releaseNamespace },
    ]);
    const controller = find(defaults, 'Deployment', 'rel-spool-controller');
    expect(podSpecOf(controller)!.automountServiceAccountToken).toBe(true);
    const environment = new Map(
      podSpecOf(controller)!.containers[0]!.env!.map((variable) => [variable.name, variable.value]),
    );
    expect(environment.get('SPOOL_SCALE_IN_GUARD_CONFIG_MAP')).toBe('rel-spool-storage-scale-in');
    expect(environment.get('SPOOL_SCALE_IN_GUARD_STATEFUL_SET')).toBe(storage);

    // Scaling the storage nodes adds a Service port per broker but leaves the gateway pods
    // alone: a changed pod template would roll every gateway on each scale.
    const gatewayTemplateAt = (replicas: number) => {
      const objects = renderChart({ storageNode: { replicas } });
      const service = find(objects, 'Service', 'rel-spool-gateway')['spec'] as {
        ports: Array<{ name: string; targetPort: number | string }>;
      };
      return {
        template: JSON.stringify(
          (find(objects, 'Deployment', 'rel-spool-gateway')['spec'] as { template: unknown })
            .template,
        ),
        brokerPorts: service.ports.filter((port) => /^kafka-\d+$/.test(port.name)),
      };
    };
    const three = gatewayTemplateAt(3);
    const four = gatewayTemplateAt(4);
    expect(four.template).toBe(three.template);
    expect(three.brokerPorts).toHaveLength(3);
    expect(four.brokerPorts.map((port) => port.targetPort)).toEqual([9400, 9401, 9402, 9403]);

    const off = renderChart({ storageNode: { scaleInGuard: { enabled: false } } });
    for (const kind of ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding', 'Role']) {
      // The TLS issuer's Role (a hook) has nothing to do with the guard.
      const guardObjects = off.filter(
        (object) => object.kind === kind && !object.metadata.name.endsWith('-tls-issuer'),
      );
      expect(guardObjects).toEqual([]);
    }
    const offController = podSpecOf(find(off, 'Deployment', 'rel-spool-controller'))!;
    expect(offController.automountServiceAccountToken).toBe(false);
    expect(
      offController.containers[0]!.env!.some((variable) => variable.name.includes('SCALE_IN')),
    ).toBe(false);

    const old = templateChart({}, { kubeVersion: '1.29.0' });
    expect(old.status).not.toBe(0);
    expect(old.stderr).toContain(
      'storageNode.scaleInGuard.enabled needs ValidatingAdmissionPolicy',
    );
    const oldOff = templateChart(
      { storageNode: { scaleInGuard: { enabled: false } } },
      { kubeVersion: '1.29.0' },
    );
    expect(oldOff.status, oldOff.stderr).toBe(0);
  });

  describe('TLS and authentication', () => {
    const roles = {
      controller: ['Deployment', 'rel-spool-controller'],
      'storage-node': ['StatefulSet', storage],
      coordinator: ['Deployment', 'rel-spool-coordinator'],
      gateway: ['Deployment', 'rel-spool-gateway'],
    } as const;
    const environmentOf = (objects: KubernetesObject[], kind: string, name: string) =>
      new Map(
        podSpecOf(find(objects, kind, name))!.containers[0]!.env!.map((variable) => [
          variable.name,
          variable.value,
        ]),
      );

    it('are on by default: every service on TLS with its own certificate, the gateway SASL_SSL with ACLs', () => {
      const objects = renders.get('defaults')!;
      for (const [role, [kind, name]] of Object.entries(roles)) {
        const podSpec = podSpecOf(find(objects, kind, name))!;
        const environment = environmentOf(objects, kind, name);
        expect(environment.get('SPOOL_SECURITY_PROTOCOL'), name).toBe('SSL');
        expect(environment.get('SPOOL_SSL_CERTIFICATE_LOCATION'), name).toBe(
          '/etc/spool/tls/tls.crt',
        );
        expect(environment.get('SPOOL_SSL_CA_LOCATION'), name).toBe('/etc/spool/tls/ca.crt');
        const volume = podSpec.volumes!.find((candidate) => candidate.name === 'tls')!;
        expect(volume.secret, name).toEqual({
          secretName: `rel-spool-${role}-tls`,
          defaultMode: 0o440,
        });
        expect(podSpec.containers[0]!.volumeMounts).toContainEqual({
          name: 'tls',
          mountPath: '/etc/spool/tls',
          readOnly: true,
        });
      }
      const gateway = environmentOf(objects, 'Deployment', 'rel-spool-gateway');
      expect(
        Object.fromEntries(
          [
            'SPOOL_KAFKA_SECURITY_PROTOCOL',
            'SPOOL_GRPC_AUTHENTICATION',
            'SPOOL_AUTHORIZER',
            'SPOOL_SUPER_USERS',
            'SPOOL_SSL_CLIENT_AUTH',
          ].map((key) => [key, gateway.get(key)]),
        ),
      ).toEqual({
        SPOOL_KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
        SPOOL_GRPC_AUTHENTICATION: 'required',
        SPOOL_AUTHORIZER: 'acl',
        SPOOL_SUPER_USERS: 'User:admin',
        SPOOL_SSL_CLIENT_AUTH: 'none',
      });

      // The controller: etcd over TLS with its certificate, and the first admin from its Secret.
      const controller = environmentOf(objects, 'Deployment', 'rel-spool-controller');
      for (const endpoint of controller.get('SPOOL_ETCD_ENDPOINTS')!.split(',')) {
        expect(endpoint).toMatch(/^https:\/\/rel-spool-etcd-\d\./);
      }
      expect(controller.get('SPOOL_ETCD_SSL_CA_LOCATION')).toBe('/etc/spool/tls/ca.crt');
      expect(controller.get('SPOOL_BOOTSTRAP_SCRAM_USER')).toBe('admin');
      expect(controller.get('SPOOL_BOOTSTRAP_SCRAM_PASSWORD_FILE')).toBe(
        '/etc/spool/admin/password',
      );
      const controllerVolumes = podSpecOf(
        find(objects, 'Deployment', 'rel-spool-controller'),
      )!.volumes!;
      expect(
        controllerVolumes.find((volume) => volume.name === 'admin-password')?.secret,
      ).toMatchObject({
        secretName: 'rel-spool-admin',
        items: [{ key: 'password' }],
      });
      const admin = find(objects, 'Secret', 'rel-spool-admin') as KubernetesObject & {
        data: Record<string, string>;
      };
      expect(Buffer.from(admin.data['username']!, 'base64').toString()).toBe('admin');
      expect(Buffer.from(admin.data['password']!, 'base64').toString()).toMatch(
        /^[A-Za-z0-9]{32}$/,
      );

      const etcd = environmentOf(objects, 'StatefulSet', 'rel-spool-etcd');
      expect(etcd.get('ETCD_LISTEN_CLIENT_URLS')).toBe('https://0.0.0.0:2379');
      expect(etcd.get('ETCD_CLIENT_CERT_AUTH')).toBe('true');
      expect(etcd.get('ETCD_TRUSTED_CA_FILE')).toBe('/etc/etcd/tls/ca.crt');

      // Without cert-manager, a hook Job issues every certificate before anything starts.
      const job = find(objects, 'Job', 'rel-spool-tls-issuer');
      expect(job.metadata.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
      // A Job is no workload to podSpecOf (no PodDisruptionBudget for a hook that runs once).
      const jobPod = (job as KubernetesObject & { spec: { template: { spec: PodSpec } } }).spec
        .template.spec;
      const args = jobPod.containers[0]!.args!;
      expect(args.slice(0, 2)).toEqual(['tls', 'kubernetes-secrets']);
      expect(args).toContain('--ca-secret=rel-spool-cluster-ca');
      const services = args.filter((arg) => arg.startsWith('--service='));
      expect(services.map((arg) => arg.slice('--service='.length).split('=')[0])).toEqual([
        'controller/rel-spool-controller-tls',
        'storage-node/rel-spool-storage-node-tls',
        'coordinator/rel-spool-coordinator-tls',
        'gateway/rel-spool-gateway-tls',
        'etcd/rel-spool-etcd-tls',
      ]);
      expect(services[3]).toContain(`rel-spool-gateway.${releaseNamespace}.svc.cluster.local`);
      expect(services[1]).toContain(
        `*.rel-spool-storage-headless.${releaseNamespace}.svc.cluster.local`,
      );
      // Its Role reads and replaces those Secrets only.
      const role = find(objects, 'Role', 'rel-spool-tls-issuer') as KubernetesObject & {
        rules: Array<{ resourceNames?: string[]; verbs: string[] }>;
      };
      expect(role.rules[0]!.resourceNames).toEqual([
        'rel-spool-cluster-ca',
        ...services.map((arg) => arg.split('/')[1]!.split('=')[0]!),
      ]);
      expect(objects.some((object) => object.apiVersion === 'cert-manager.io/v1')).toBe(false);
    });

    it('leaves issuing to cert-manager where the cluster has it, with the role URIs', () => {
      const objects = renders.get('cert-manager')!;
      expect(objects.some((object) => object.kind === 'Job')).toBe(false);
      const ca = find(objects, 'Certificate', 'rel-spool-cluster-ca') as KubernetesObject & {
        spec: Record<string, unknown>;
      };
      expect(ca.spec).toMatchObject({ isCA: true, secretName: 'rel-spool-cluster-ca' });
      for (const role of [...Object.keys(roles), 'etcd']) {
        const certificate = find(
          objects,
          'Certificate',
          `rel-spool-${role}-tls`,
        ) as KubernetesObject & {
          spec: { secretName: string; uris?: string[]; issuerRef: { name: string } };
        };
        expect(certificate.spec.secretName).toBe(`rel-spool-${role}-tls`);
        expect(certificate.spec.issuerRef.name).toBe('rel-spool-cluster-ca');
        expect(certificate.spec.uris).toEqual(
          role === 'etcd' ? undefined : [`spool://service/${role}`],
        );
      }
      const forced = templateChart({ tls: { issuer: 'cert-manager' } });
      expect(forced.status).not.toBe(0);
      expect(forced.stderr).toContain(
        'tls.issuer=cert-manager, but this cluster serves no cert-manager.io/v1',
      );
    });

    it('can be turned off: plaintext everywhere, no issuer, no admin', () => {
      const objects = renders.get('tls and authentication off')!;
      for (const [kind, name] of Object.values(roles)) {
        expect(environmentOf(objects, kind, name).has('SPOOL_SECURITY_PROTOCOL'), name).toBe(false);
      }
      const controller = environmentOf(objects, 'Deployment', 'rel-spool-controller');
      expect(controller.get('SPOOL_ETCD_ENDPOINTS')).toMatch(/^http:\/\//);
      expect(controller.has('SPOOL_BOOTSTRAP_SCRAM_USER')).toBe(false);
      expect(objects.filter((object) => ['Job', 'Secret'].includes(object.kind))).toEqual([]);
    });

    it('refuses authentication without TLS, and takes an admin password Secret of yours', () => {
      const refused = templateChart({ tls: { enabled: false } });
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toContain('authentication.enabled needs tls.enabled');
      const clientCertificates = templateChart({
        tls: { enabled: false },
        authentication: { enabled: false },
        gateway: { kafka: { sslClientAuth: 'required' } },
      });
      expect(clientCertificates.stderr).toContain(
        'gateway.kafka.sslClientAuth=required needs tls.enabled',
      );

      const objects = renderChart({
        authentication: { admin: { user: 'root', existingSecret: 'my-admin' } },
      });
      expect(objects.some((object) => object.kind === 'Secret')).toBe(false);
      const controllerVolumes = podSpecOf(
        find(objects, 'Deployment', 'rel-spool-controller'),
      )!.volumes!;
      expect(
        controllerVolumes.find((volume) => volume.name === 'admin-password')?.secret?.secretName,
      ).toBe('my-admin');
      expect(
        environmentOf(objects, 'Deployment', 'rel-spool-gateway').get('SPOOL_SUPER_USERS'),
      ).toBe('User:root');
    });
  });

  it('rejects a default replication factor larger than the storage nodes', () => {
    const result = templateChart({ storageNode: { replicas: 2 } });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain(
      'controller.defaultReplicationFactor (3) is larger than storageNode.replicas (2)',
    );
  });

  it('tells the user in NOTES.txt how to reach the gateway, produce and consume', () => {
    // helm template does not render NOTES.txt; a copy of the chart renders it into a ConfigMap.
    const folder = mkdtempSync(path.join(tmpdir(), 'spool-chart-notes-'));
    try {
      const chart = path.join(folder, 'spool');
      cpSync(chartPath, chart, { recursive: true });
      const notes = readFileSync(path.join(chart, 'templates/NOTES.txt'), 'utf8');
      writeFileSync(
        path.join(chart, 'templates/_notes-under-test.tpl'),
        `{{- define "test.notes" -}}\n${notes}\n{{- end -}}\n`,
      );
      writeFileSync(
        path.join(chart, 'templates/notes-under-test.yaml'),
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n' +
          '  notes: {{ include "test.notes" . | quote }}\n',
      );
      const render = (values: Record<string, unknown>) =>
        (find(renderChart(values, { chart }), 'ConfigMap', 'notes')['data'] as { notes: string })
          .notes;
      const defaults = render({});
      expect(defaults).toContain('rel-spool-gateway.spool-test.svc.cluster.local:9090');
      expect(defaults).toContain('port-forward service/rel-spool-gateway 9090:9090');
      expect(defaults).toMatch(/spool topic create greetings .*--replication-factor 3/);
      expect(defaults).toContain('echo "hello" | spool produce greetings');
      expect(defaults).toContain('spool consume greetings --from-beginning');
      expect(defaults).toContain('helm test rel --namespace spool-test');
      expect(defaults).toContain('spool broker decommission N, then wait for REMOVABLE');
      expect(defaults).toContain('The scale-in guard refuses a scale-in until then');
      // TLS and authentication on by default: the CA, the admin's password, a client.properties.
      expect(defaults).toContain(
        "get secret rel-spool-gateway-tls -o jsonpath='{.data.ca\\.crt}' | base64 -d > ca.crt",
      );
      expect(defaults).toContain(
        "sasl.password=$(kubectl --namespace spool-test get secret rel-spool-admin -o jsonpath='{.data.password}' | base64 -d)",
      );
      expect(defaults).toContain('security.protocol=SASL_SSL');
      const open = render({ tls: { enabled: false }, authentication: { enabled: false } });
      expect(open).toContain(
        '--env SPOOL_GATEWAY=rel-spool-gateway.spool-test.svc.cluster.local:9090',
      );
      expect(open).not.toContain('SASL_SSL');
      const loadBalancer = render({ gateway: { service: { type: 'LoadBalancer' } } });
      expect(loadBalancer).toContain('get service rel-spool-gateway');
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('documents every value with a comment that starts with its name', () => {
    const lines = readFileSync(path.join(chartPath, 'values.yaml'), 'utf8').split('\n');
    const stack: Array<{ indent: number; name: string }> = [];
    let documented = 0;
    for (const [index, line] of lines.entries()) {
      const key = /^( *)([A-Za-z][A-Za-z0-9]*):/.exec(line);
      if (key === null) continue;
      const indent = key[1]!.length;
      while (stack.length > 0 && stack[stack.length - 1]!.indent >= indent) stack.pop();
      const parent = stack[stack.length - 1];
      stack.push({ indent, name: parent === undefined ? key[2]! : `${parent.name}.${key[2]}` });
      // Keys inside a documented Kubernetes object (securityContext, resources) are its own.
      if (['podSecurityContext', 'containerSecurityContext'].includes(stack[0]!.name)) continue;
      if (/\.resources\./.test(stack[stack.length - 1]!.name)) continue;
      const name = stack[stack.length - 1]!.name;
      // The first line of the comment block right above the key starts with the key's name.
      let comment = index;
      while (comment > 0 && /^ *#/.test(lines[comment - 1]!)) comment--;
      expect(comment, `a comment above ${name}`).toBeLessThan(index);
      expect(lines[comment], `comment above ${name}`).toMatch(
        new RegExp(`^ *# ${name.replace(/\./g, '\\.')} `),
      );
      documented++;
    }
    expect(documented).toBeGreaterThan(60);
  });
});

describe('alerting rules and dashboards in the chart', () => {
  const alertsSource = path.join(workspaceRoot, 'deploy/prometheus/alerts.yaml');
  const alertsCopy = path.join(chartPath, 'files/alerts.yaml');
  const dashboardsSource = path.join(workspaceRoot, 'deploy/grafana');
  const dashboardsCopy = path.join(chartPath, 'files/dashboards');

  it('are identical copies of deploy/prometheus/alerts.yaml and deploy/grafana/*.json', () => {
    // A chart can read only files inside itself, so the chart carries copies.
    expect(existsSync(alertsCopy)).toBe(existsSync(alertsSource));
    if (existsSync(alertsSource)) {
      expect(readFileSync(alertsCopy, 'utf8')).toBe(readFileSync(alertsSource, 'utf8'));
    }
    // Dashboards may sit in subfolders of deploy/grafana; the chart keeps them flat, by name.
    const dashboardsIn = (folder: string): Map<string, string> => {
      const found = new Map<string, string>();
      if (!existsSync(folder)) return found;
      for (const entry of readdirSync(folder, { recursive: true, withFileTypes: true })) {
        if (entry.isFile() && entry.name.endsWith('.json')) {
          found.set(entry.name, readFileSync(path.join(entry.parentPath, entry.name), 'utf8'));
        }
      }
      return found;
    };
    const sources = dashboardsIn(dashboardsSource);
    const copies = dashboardsIn(dashboardsCopy);
    expect([...copies.keys()].sort()).toEqual([...sources.keys()].sort());
    for (const [name, text] of sources) expect(copies.get(name), name).toBe(text);
  });

  it('become a PrometheusRule and a sidecar-labelled ConfigMap when the files are there', () => {
    // A copy of the chart with stand-in files, so the templates are tested whatever exists yet.
    const folder = mkdtempSync(path.join(tmpdir(), 'spool-chart-'));
    try {
      const chart = path.join(folder, 'spool');
      cpSync(chartPath, chart, { recursive: true });
      rmSync(path.join(chart, 'files'), { recursive: true, force: true });
      const files = path.join(chart, 'files', 'dashboards');
      mkdirSync(files, { recursive: true });
      writeFileSync(
        path.join(chart, 'files', 'alerts.yaml'),
        'groups:\n  - name: spool\n    rules:\n      - alert: SpoolOfflinePartitions\n' +
          '        expr: sum(spool_offline_partitions) > 0\n        for: 1m\n' +
          '        labels:\n          severity: critical\n' +
          '        annotations:\n          summary: "{{ $value }} partitions have no leader"\n',
      );
      writeFileSync(path.join(files, 'spool-overview.json'), '{"title": "Spool"}\n');
      const objects = renderChart({ metrics: { serviceMonitor: { enabled: true } } }, { chart });
      expect(validateObjects(objects)).toEqual([]);
      expect(strictDecodeProblems(objects)).toEqual([]);
      const rule = find(objects, 'PrometheusRule', 'rel-spool')['spec'] as {
        groups: Array<{ name: string; rules: Array<{ alert: string; annotations: object }> }>;
      };
      expect(rule.groups[0]!.rules[0]).toMatchObject({
        alert: 'SpoolOfflinePartitions',
        annotations: { summary: '{{ $value }} partitions have no leader' },
      });
      const dashboards = find(objects, 'ConfigMap', 'rel-spool-dashboards');
      expect(dashboards.metadata.labels?.['grafana_dashboard']).toBe('1');
      expect(dashboards['data']).toEqual({ 'spool-overview.json': '{"title": "Spool"}' });
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

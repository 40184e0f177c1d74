import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { serviceRoles } from '@spool/common';
import { UsageError } from './cli-errors';
import { parseCommandArgs, requirePositionals } from './cli-options';
import {
  certificateAuthorityOf,
  decideServiceSecret,
  newClusterCa,
  type CertificateHolder,
  type TlsSecretData,
  type WantedServiceCertificate,
} from './cluster-certificates';
import type { CommandHelp } from './command-help';
import type { CommandContext } from './commands';
import { toJsonDocument } from './output';

/**
 * `spool tls kubernetes-secrets`: the cluster CA and the services' certificates as Kubernetes
 * Secrets, written through the Kubernetes API with the pod's service account (or $KUBECONFIG).
 * The chart runs it as a pre-install and pre-upgrade hook Job when cert-manager does not issue
 * them; it is idempotent (cluster-certificates.ts decides what each Secret needs), so running it
 * on every upgrade renews what is due and writes nothing else.
 */
export const tlsKubernetesSecretsHelp: CommandHelp = {
  path: ['tls', 'kubernetes-secrets'],
  usage:
    'spool tls kubernetes-secrets --ca-secret NAME --service ROLE/SECRET=HOST[,HOST...] ... ' +
    '[--namespace NS]',
  summary:
    "Create the cluster CA's Secret if absent and (re)issue each service's TLS Secret when due.",
  details: [
    'Each Secret is of type kubernetes.io/tls with tls.crt, tls.key and ca.crt, as cert-manager',
    "writes them. A service's certificate carries spool://service/<ROLE> and the given hosts (DNS",
    'names, *.wildcards, IP addresses); it is issued again when missing, not from the CA, missing',
    'a host, or within --renew-before-days of expiry. The CA is never replaced.',
  ],
  flags: {
    namespace: {
      type: 'string',
      valueName: 'NS',
      defaultText: "the pod's own namespace, else default",
      description: 'the namespace of the Secrets',
    },
    'ca-secret': { type: 'string', valueName: 'NAME', description: "the cluster CA's Secret" },
    service: {
      type: 'string',
      multiple: true,
      valueName: 'ROLE/SECRET=HOSTS',
      description:
        `a service's Secret and hosts; ROLE one of ${serviceRoles.join(', ')}, or etcd (a ` +
        'server certificate with no service role); repeatable',
    },
    'validity-days': {
      type: 'string',
      valueName: 'DAYS',
      default: '365',
      description: "a service certificate's validity",
    },
    'renew-before-days': {
      type: 'string',
      valueName: 'DAYS',
      default: '30',
      description: 'issue a service certificate again this long before it expires',
    },
    'ca-validity-days': {
      type: 'string',
      valueName: 'DAYS',
      default: '3650',
      description: "a new cluster CA's validity",
    },
  },
  examples: [
    'spool tls kubernetes-secrets --namespace kafka --ca-secret spool-cluster-ca ' +
      '--service gateway/spool-gateway-tls=spool-gateway.kafka.svc,spool-gateway.kafka.svc.cluster.local',
  ],
};

export const tlsHelp: CommandHelp = {
  path: ['tls'],
  usage: 'spool tls kubernetes-secrets ...',
  summary: "Manage the cluster CA and the services' certificates (the chart's hook runs it).",
  flags: {},
  examples: ['spool tls kubernetes-secrets --help'],
};

export const tlsSubcommandHelps: Readonly<Record<string, CommandHelp>> = {
  'kubernetes-secrets': tlsKubernetesSecretsHelp,
};

/** Reads and writes Secrets; the Kubernetes API in production, a map in tests. */
export interface SecretStore {
  read(name: string): Promise<TlsSecretData | undefined>;
  /** `create`: it did not exist when read; a conflict then fails rather than overwrite. */
  write(name: string, data: Required<TlsSecretData>, create: boolean): Promise<void>;
}

export interface SecretOutcome {
  readonly secret: string;
  readonly action: 'created' | 'replaced' | 'kept';
  readonly reason: string;
}

const certificateHolders: readonly CertificateHolder[] = [...serviceRoles, 'etcd'];

const serviceAccountNamespaceFile = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

export async function runTlsCommand(context: CommandContext): Promise<number> {
  const [subcommand, ...argv] = context.argv;
  if (subcommand !== 'kubernetes-secrets') {
    throw new UsageError(
      subcommand === undefined
        ? `tls needs a subcommand; usage: ${tlsHelp.usage}`
        : `unknown tls subcommand "${subcommand}"; usage: ${tlsHelp.usage}`,
    );
  }
  const help = tlsKubernetesSecretsHelp;
  const parsed = parseCommandArgs(argv, help.flags, context.env ?? process.env);
  requirePositionals(parsed.positionals, [], help.usage);
  const caSecret = parsed.values['ca-secret'] as string | undefined;
  if (caSecret === undefined || caSecret === '') {
    throw new UsageError(`tls kubernetes-secrets needs --ca-secret NAME; usage: ${help.usage}`);
  }
  const services = ((parsed.values['service'] as string[] | undefined) ?? []).map(parseService);
  const options = {
    validityDays: positiveDays(parsed.values['validity-days'], '--validity-days'),
    renewBeforeDays: positiveDays(parsed.values['renew-before-days'], '--renew-before-days'),
    caValidityDays: positiveDays(parsed.values['ca-validity-days'], '--ca-validity-days'),
  };
  if (options.renewBeforeDays >= options.validityDays) {
    throw new UsageError(
      `--renew-before-days (${options.renewBeforeDays}) must be less than --validity-days ` +
        `(${options.validityDays}), or every run would issue again`,
    );
  }
  const namespace = (parsed.values['namespace'] as string | undefined) ?? podNamespace();
  const store = await kubernetesSecretStore(namespace);
  const outcomes = await reconcileClusterCertificates(store, caSecret, services, {
    ...options,
    now: new Date(),
  });
  context.stdout.write(
    parsed.global.json
      ? toJsonDocument({ namespace, secrets: outcomes })
      : outcomes
          .map(
            (outcome) => `${namespace}/${outcome.secret}: ${outcome.action} (${outcome.reason})\n`,
          )
          .join(''),
  );
  return 0;
}

/** The CA first (created when absent), then each service's Secret as decideServiceSecret says. */
export async function reconcileClusterCertificates(
  store: SecretStore,
  caSecret: string,
  services: readonly WantedServiceCertificate[],
  options: {
    readonly validityDays: number;
    readonly renewBeforeDays: number;
    readonly caValidityDays: number;
    readonly now: Date;
  },
): Promise<SecretOutcome[]> {
  const outcomes: SecretOutcome[] = [];
  let caData = await store.read(caSecret);
  if (caData === undefined) {
    caData = newClusterCa(options.caValidityDays);
    await store.write(caSecret, caData as Required<TlsSecretData>, true);
    outcomes.push({ secret: caSecret, action: 'created', reason: 'it did not exist' });
  } else {
    outcomes.push({ secret: caSecret, action: 'kept', reason: 'the cluster CA is never replaced' });
  }
  const ca = certificateAuthorityOf(caData);
  if ('problem' in ca) {
    throw new Error(
      `the cluster CA Secret ${caSecret} cannot be used: ${ca.problem}; fix or delete it ` +
        '(deleting it issues a new CA, which clients holding the old ca.crt will not trust)',
    );
  }
  for (const wanted of services) {
    const existing = await store.read(wanted.secretName);
    const decision = decideServiceSecret(ca.authority, wanted, existing, options);
    if (decision.action === 'keep') {
      outcomes.push({ secret: wanted.secretName, action: 'kept', reason: decision.reason });
      continue;
    }
    await store.write(wanted.secretName, decision.data, existing === undefined);
    outcomes.push({
      secret: wanted.secretName,
      action: existing === undefined ? 'created' : 'replaced',
      reason: decision.reason,
    });
  }
  return outcomes;
}

/** `ROLE/SECRET=HOST,HOST`. */
function parseService(value: string): WantedServiceCertificate {
  const equals = value.indexOf('=');
  const slash = value.indexOf('/');
  const role = value.slice(0, slash);
  const secretName = value.slice(slash + 1, equals);
  const hosts = value
    .slice(equals + 1)
    .split(',')
    .map((host) => host.trim())
    .filter((host) => host !== '');
  if (slash <= 0 || equals < slash || !(certificateHolders as readonly string[]).includes(role)) {
    throw new UsageError(
      `--service ${JSON.stringify(value)}: expected ROLE/SECRET=HOST[,HOST...] with ROLE one of ` +
        certificateHolders.join(', '),
    );
  }
  if (!/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(secretName)) {
    throw new UsageError(
      `--service ${JSON.stringify(value)}: "${secretName}" is not a Secret name`,
    );
  }
  for (const host of hosts) {
    if (isIP(host) === 0 && !/^(\*\.)?[A-Za-z0-9]([-A-Za-z0-9.]{0,251}[A-Za-z0-9])?$/.test(host)) {
      throw new UsageError(
        `--service ${JSON.stringify(value)}: "${host}" is neither a DNS name nor an IP address`,
      );
    }
  }
  if (hosts.length === 0) {
    throw new UsageError(`--service ${JSON.stringify(value)}: name at least one host`);
  }
  return { role: role as CertificateHolder, secretName, hosts };
}

function positiveDays(value: unknown, flag: string): number {
  const text = String(value);
  if (!/^[1-9]\d{0,5}$/.test(text)) {
    throw new UsageError(`${flag} must be a whole number of days from 1, got "${text}"`);
  }
  return Number(text);
}

function podNamespace(): string {
  try {
    return readFileSync(serviceAccountNamespaceFile, 'utf8').trim() || 'default';
  } catch {
    return 'default';
  }
}

/** The HTTP status of a Kubernetes API error (client-node's ApiException has it as `code`). */
function statusOf(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** Secrets through the Kubernetes API: in a pod its service account, else $KUBECONFIG. */
async function kubernetesSecretStore(namespace: string): Promise<SecretStore> {
  // client-node is an ES module; only this command loads it.
  const kubernetes = await import('@kubernetes/client-node');
  const kubeConfig = new kubernetes.KubeConfig();
  kubeConfig.loadFromDefault();
  const api = kubeConfig.makeApiClient(kubernetes.CoreV1Api);
  const decode = (data: Record<string, string> | undefined): TlsSecretData => {
    const field = (key: string) =>
      data?.[key] === undefined ? undefined : Buffer.from(data[key], 'base64').toString('utf8');
    return {
      ...(field('tls.crt') === undefined ? {} : { 'tls.crt': field('tls.crt')! }),
      ...(field('tls.key') === undefined ? {} : { 'tls.key': field('tls.key')! }),
      ...(field('ca.crt') === undefined ? {} : { 'ca.crt': field('ca.crt')! }),
    };
  };
  return {
    read: async (name) => {
      try {
        return decode((await api.readNamespacedSecret({ name, namespace })).data);
      } catch (error) {
        if (statusOf(error) === 404) return undefined;
        throw new Error(`reading Secret ${namespace}/${name}: ${describeApiError(error)}`);
      }
    },
    write: async (name, data, create) => {
      const body = {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'kubernetes.io/tls',
        metadata: {
          name,
          namespace,
          labels: { 'app.kubernetes.io/part-of': 'spool', 'app.kubernetes.io/managed-by': 'spool' },
        },
        stringData: data,
      };
      try {
        if (create) await api.createNamespacedSecret({ namespace, body });
        else await api.replaceNamespacedSecret({ name, namespace, body });
      } catch (error) {
        throw new Error(
          `${create ? 'creating' : 'replacing'} Secret ${namespace}/${name}: ${describeApiError(error)}`,
        );
      }
    },
  };
}

function describeApiError(error: unknown): string {
  const status = statusOf(error);
  const body = (error as { body?: unknown } | undefined)?.body;
  let message: string | undefined;
  if (typeof body === 'string') {
    try {
      message = (JSON.parse(body) as { message?: string }).message;
    } catch {
      message = body.slice(0, 300);
    }
  }
  return status === undefined
    ? String((error as Error).message ?? error)
    : `HTTP ${status}${message === undefined ? '' : `: ${message}`}`;
}

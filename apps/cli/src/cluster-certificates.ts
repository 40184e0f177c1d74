import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import { isIP } from 'node:net';
import {
  createCertificateAuthority,
  issueCertificate,
  serviceRoleUri,
  type CertificateAuthority,
  type ServiceRole,
} from '@spool/common';

/**
 * The cluster CA and the services' certificates as Kubernetes keeps them: Secrets of type
 * kubernetes.io/tls, each with tls.crt, tls.key and ca.crt (the layout cert-manager writes, so
 * the chart mounts either the same way). What to do with each Secret is decided here, from what
 * the Secret holds and what is wanted, without the Kubernetes API (tls-command.ts
 * reads and writes the Secrets).
 *
 * The CA is created once and kept: replacing it would leave every client holding the old ca.crt
 * unable to connect. A service certificate is (re)issued when its Secret is missing or unusable,
 * was not signed by the CA, lacks a wanted host or its role's URI, or expires within the renewal
 * window; otherwise it is kept, so an upgrade that changes nothing writes nothing.
 */

export const clusterCaCommonName = 'spool-cluster-ca';

export interface TlsSecretData {
  readonly 'tls.crt'?: string;
  readonly 'tls.key'?: string;
  readonly 'ca.crt'?: string;
}

/**
 * Whose certificate: a Spool service's (its role URI in subjectAltName) or etcd's, a server
 * certificate for the chart's etcd that names no role, so etcd can never pass for a service.
 */
export type CertificateHolder = ServiceRole | 'etcd';

export interface WantedServiceCertificate {
  readonly role: CertificateHolder;
  readonly secretName: string;
  /** DNS names (wildcards allowed) and IP addresses. */
  readonly hosts: readonly string[];
}

export type SecretDecision =
  | { readonly action: 'keep'; readonly reason: string }
  | { readonly action: 'write'; readonly reason: string; readonly data: Required<TlsSecretData> };

const dayMs = 86_400_000;

/** The CA a Secret holds, or why it is unusable. */
export function certificateAuthorityOf(
  data: TlsSecretData,
): { authority: CertificateAuthority } | { problem: string } {
  const certificatePem = data['tls.crt'];
  const privateKeyPem = data['tls.key'];
  if (certificatePem === undefined || privateKeyPem === undefined) {
    return { problem: 'it lacks tls.crt or tls.key' };
  }
  try {
    const certificate = new X509Certificate(certificatePem);
    if (!certificate.ca) return { problem: 'its tls.crt is not a CA certificate' };
    const publicKey = createPublicKey(createPrivateKey(privateKeyPem));
    if (!certificate.publicKey.equals(publicKey)) {
      return { problem: 'its tls.key does not belong to its tls.crt' };
    }
  } catch (error) {
    return { problem: `its tls.crt or tls.key cannot be read (${(error as Error).message})` };
  }
  return { authority: { certificatePem, privateKeyPem } };
}

/** A new cluster CA, as the Secret's data. */
export function newClusterCa(validityDays: number): Required<TlsSecretData> {
  const authority = createCertificateAuthority(
    { commonName: clusterCaCommonName, organization: 'Spool' },
    validityDays,
  );
  return {
    'tls.crt': authority.certificatePem,
    'tls.key': authority.privateKeyPem,
    'ca.crt': authority.certificatePem,
  };
}

/** What to do with one service's Secret (undefined: it does not exist). */
export function decideServiceSecret(
  authority: CertificateAuthority,
  wanted: WantedServiceCertificate,
  existing: TlsSecretData | undefined,
  options: { readonly validityDays: number; readonly renewBeforeDays: number; readonly now: Date },
): SecretDecision {
  const problem =
    existing === undefined ? 'it does not exist' : problemOf(authority, wanted, existing, options);
  if (problem === undefined) {
    return { action: 'keep', reason: 'valid, issued by the cluster CA for every wanted name' };
  }
  const issued = issueCertificate(authority, {
    subject: { commonName: `spool-${wanted.role}`, organization: 'Spool' },
    hosts: wanted.hosts,
    uris: wanted.role === 'etcd' ? [] : [serviceRoleUri(wanted.role)],
    notBefore: new Date(options.now.getTime() - 60 * 60 * 1000),
    notAfter: new Date(options.now.getTime() + options.validityDays * dayMs),
  });
  return {
    action: 'write',
    reason: problem,
    data: {
      'tls.crt': issued.certificatePem,
      'tls.key': issued.privateKeyPem,
      'ca.crt': authority.certificatePem,
    },
  };
}

function problemOf(
  authority: CertificateAuthority,
  wanted: WantedServiceCertificate,
  existing: TlsSecretData,
  options: { readonly renewBeforeDays: number; readonly now: Date },
): string | undefined {
  const certificatePem = existing['tls.crt'];
  const keyPem = existing['tls.key'];
  if (certificatePem === undefined || keyPem === undefined || existing['ca.crt'] === undefined) {
    return 'it lacks tls.crt, tls.key or ca.crt';
  }
  if (existing['ca.crt'] !== authority.certificatePem) return 'its ca.crt is not the cluster CA';
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(certificatePem);
    if (!certificate.publicKey.equals(createPublicKey(createPrivateKey(keyPem)))) {
      return 'its tls.key does not belong to its tls.crt';
    }
  } catch (error) {
    return `its tls.crt or tls.key cannot be read (${(error as Error).message})`;
  }
  const caCertificate = new X509Certificate(authority.certificatePem);
  if (!certificate.checkIssued(caCertificate) || !certificate.verify(caCertificate.publicKey)) {
    return 'it was not issued by the cluster CA';
  }
  const renewAtMs = Date.parse(certificate.validTo) - options.renewBeforeDays * dayMs;
  if (options.now.getTime() >= renewAtMs) {
    return `it expires ${certificate.validTo}, within ${options.renewBeforeDays} days`;
  }
  const names = new Set(
    (certificate.subjectAltName ?? '')
      .split(', ')
      .map((name) =>
        name.startsWith('IP Address:')
          ? `IP:${canonicalIp(name.slice('IP Address:'.length))}`
          : name,
      ),
  );
  const roleUri = wanted.role === 'etcd' ? undefined : serviceRoleUri(wanted.role);
  if (roleUri !== undefined && !names.has(`URI:${roleUri}`)) return `it does not name ${roleUri}`;
  if (roleUri === undefined && [...names].some((name) => name.startsWith('URI:'))) {
    return 'it names a service role';
  }
  const missing = wanted.hosts.filter((host) =>
    isIP(host) === 0 ? !names.has(`DNS:${host}`) : !names.has(`IP:${canonicalIp(host)}`),
  );
  if (missing.length > 0) return `it does not name ${missing.join(', ')}`;
  return undefined;
}

/** One spelling per address: X509Certificate writes IPv6 in full (0:0:0:0:0:0:0:1). */
function canonicalIp(address: string): string {
  return isIP(address) === 6 ? new URL(`http://[${address}]`).hostname : address;
}

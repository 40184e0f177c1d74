// Proves what `spool tls kubernetes-secrets` does with each Secret, on an in-memory store in
// place of the Kubernetes API (the k8s suite runs it against a real one through the chart): a
// first run creates the CA and every service's Secret, a second writes nothing, and a service
// Secret is issued again when it lacks a wanted host, expires within the renewal window, or
// comes from another CA, never the CA itself; a broken CA Secret stops the run naming it.
import { X509Certificate } from 'node:crypto';
import {
  createCertificateAuthority,
  issueCertificate,
  serviceRoleUri,
  type CertificateAuthority,
} from '@spool/common';
import { describe, expect, it } from 'vitest';
import type { TlsSecretData, WantedServiceCertificate } from './cluster-certificates';
import { reconcileClusterCertificates, type SecretStore } from './tls-command';

function memoryStore(): SecretStore & { secrets: Map<string, TlsSecretData>; writes: string[] } {
  const secrets = new Map<string, TlsSecretData>();
  const writes: string[] = [];
  return {
    secrets,
    writes,
    read: async (name) => secrets.get(name),
    write: async (name, data, create) => {
      if (create && secrets.has(name)) throw new Error(`${name} exists`);
      secrets.set(name, data);
      writes.push(name);
    },
  };
}

const options = { validityDays: 365, renewBeforeDays: 30, caValidityDays: 3650, now: new Date() };
const services: WantedServiceCertificate[] = [
  { role: 'gateway', secretName: 'spool-gateway-tls', hosts: ['spool-gateway.ns.svc', '::1'] },
  {
    role: 'storage-node',
    secretName: 'spool-storage-node-tls',
    hosts: ['*.spool-storage-headless.ns.svc.cluster.local', '198.19.0.90'],
  },
  { role: 'etcd', secretName: 'spool-etcd-tls', hosts: ['*.spool-etcd-headless.ns.svc'] },
];

function caOf(store: { secrets: Map<string, TlsSecretData> }): CertificateAuthority {
  const data = store.secrets.get('spool-cluster-ca')!;
  return { certificatePem: data['tls.crt']!, privateKeyPem: data['tls.key']! };
}

describe('spool tls kubernetes-secrets', () => {
  it("creates the CA and the services' Secrets once, then keeps them", async () => {
    const store = memoryStore();
    const first = await reconcileClusterCertificates(store, 'spool-cluster-ca', services, options);
    expect(first.map((outcome) => `${outcome.secret} ${outcome.action}`)).toEqual([
      'spool-cluster-ca created',
      'spool-gateway-tls created',
      'spool-storage-node-tls created',
      'spool-etcd-tls created',
    ]);
    const ca = new X509Certificate(caOf(store).certificatePem);
    const storage = store.secrets.get('spool-storage-node-tls')!;
    const certificate = new X509Certificate(storage['tls.crt']!);
    expect(certificate.verify(ca.publicKey)).toBe(true);
    expect(storage['ca.crt']).toBe(caOf(store).certificatePem);
    expect(certificate.subjectAltName).toBe(
      'DNS:*.spool-storage-headless.ns.svc.cluster.local, IP Address:198.19.0.90, ' +
        `URI:${serviceRoleUri('storage-node')}`,
    );

    // etcd's certificate names no service role: etcd can never pass for a service.
    const etcd = new X509Certificate(store.secrets.get('spool-etcd-tls')!['tls.crt']!);
    expect(etcd.subjectAltName).toBe('DNS:*.spool-etcd-headless.ns.svc');

    store.writes.length = 0;
    const second = await reconcileClusterCertificates(store, 'spool-cluster-ca', services, options);
    expect(second.map((outcome) => outcome.action)).toEqual(['kept', 'kept', 'kept', 'kept']);
    expect(store.writes).toEqual([]);
  });

  it('issues again for a new host, a near expiry or another CA, never a new CA', async () => {
    const store = memoryStore();
    await reconcileClusterCertificates(store, 'spool-cluster-ca', services, options);
    const caBefore = store.secrets.get('spool-cluster-ca');

    const moreHosts = services.map((wanted) =>
      wanted.role === 'gateway'
        ? { ...wanted, hosts: [...wanted.hosts, 'kafka.example.com'] }
        : wanted,
    );
    const added = await reconcileClusterCertificates(store, 'spool-cluster-ca', moreHosts, options);
    expect(added[1]).toEqual({
      secret: 'spool-gateway-tls',
      action: 'replaced',
      reason: 'it does not name kafka.example.com',
    });
    expect(added[2]!.action).toBe('kept');

    const expiring = issueCertificate(caOf(store), {
      subject: { commonName: 'spool-storage-node' },
      hosts: services[1]!.hosts,
      uris: [serviceRoleUri('storage-node')],
      notAfter: new Date(Date.now() + 10 * 86_400_000),
    });
    store.secrets.set('spool-storage-node-tls', {
      'tls.crt': expiring.certificatePem,
      'tls.key': expiring.privateKeyPem,
      'ca.crt': caOf(store).certificatePem,
    });
    const renewed = await reconcileClusterCertificates(
      store,
      'spool-cluster-ca',
      moreHosts,
      options,
    );
    expect(renewed[2]!.action).toBe('replaced');
    expect(renewed[2]!.reason).toMatch(/^it expires .* within 30 days$/);

    const stranger = createCertificateAuthority({ commonName: 'stranger' });
    const foreign = issueCertificate(stranger, {
      subject: { commonName: 'spool-gateway' },
      hosts: moreHosts[0]!.hosts,
      uris: [serviceRoleUri('gateway')],
    });
    store.secrets.set('spool-gateway-tls', {
      'tls.crt': foreign.certificatePem,
      'tls.key': foreign.privateKeyPem,
      // A ca.crt that claims the cluster CA does not make the certificate its.
      'ca.crt': caOf(store).certificatePem,
    });
    const replaced = await reconcileClusterCertificates(
      store,
      'spool-cluster-ca',
      moreHosts,
      options,
    );
    expect(replaced[1]).toMatchObject({
      action: 'replaced',
      reason: 'it was not issued by the cluster CA',
    });
    expect(store.secrets.get('spool-cluster-ca')).toBe(caBefore);
  });

  it('stops on a CA Secret it cannot use, naming it and what is wrong', async () => {
    const store = memoryStore();
    const leaf = issueCertificate(createCertificateAuthority({ commonName: 'x' }), {
      subject: { commonName: 'not-a-ca' },
    });
    store.secrets.set('spool-cluster-ca', {
      'tls.crt': leaf.certificatePem,
      'tls.key': leaf.privateKeyPem,
    });
    await expect(
      reconcileClusterCertificates(store, 'spool-cluster-ca', services, options),
    ).rejects.toThrow(
      /the cluster CA Secret spool-cluster-ca cannot be used: its tls.crt is not a CA certificate/,
    );
    expect(store.writes).toEqual([]);
  });
});

// Proves the etcd client over TLS against a real etcd serving https with client certificate
// authentication (--cert-file, --key-file, --trusted-ca-file, --client-cert-auth), with
// certificates from the development CA: a client with the CA and a certificate connects and
// reads; one without a client certificate, one on plaintext, and one trusting another CA are
// refused; a CA file that is missing is a TLS_MATERIAL_INVALID error naming the file; a CA file
// rotated on disk is what the next connection trusts, without a restart of the client.
import { createCertificateAuthority, writeDevelopmentCertificates } from '@spool/common';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdMetadataStore } from './etcd-metadata-store';
import { startEtcdServer, type EtcdTestCluster } from './testing';

const directory = mkdtempSync(path.join(tmpdir(), 'spool-etcd-tls-'));
const certificates = writeDevelopmentCertificates(directory, { hosts: ['127.0.0.1'] });
/** A refused connection fails within this, not etcd3's default deadline. */
const requestTimeoutMs = 2_000;
let etcd: EtcdTestCluster;

beforeAll(async () => {
  const server = certificates.services['storage-node'];
  etcd = await startEtcdServer({
    tls: {
      certificateFile: server.certificateFile,
      keyFile: server.keyFile,
      caFile: server.caFile,
    },
  });
});

afterAll(async () => {
  await etcd?.stop();
  rmSync(directory, { recursive: true, force: true });
});

describe('EtcdMetadataStore over TLS', () => {
  it('connects and reads with the CA and a client certificate', async () => {
    expect(etcd.endpoints[0]).toMatch(/^https:\/\//);
    const store = await EtcdMetadataStore.connect({
      endpoints: etcd.endpoints,
      requestTimeoutMs,
      tls: certificates.services.controller,
    });
    try {
      expect((await store.getPrefix('/etcd-tls-spec/')).entries).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('is refused without a client certificate, on plaintext, or trusting another CA', async () => {
    await expect(
      EtcdMetadataStore.connect({
        endpoints: etcd.endpoints,
        requestTimeoutMs,
        tls: { caFile: certificates.caFile },
      }),
    ).rejects.toMatchObject({ code: 'METADATA_STORE_UNAVAILABLE' });
    await expect(
      EtcdMetadataStore.connect({
        endpoints: etcd.endpoints.map((endpoint) => endpoint.replace('https://', 'http://')),
        requestTimeoutMs,
      }),
    ).rejects.toMatchObject({ code: 'METADATA_STORE_UNAVAILABLE' });
    const stranger = path.join(directory, 'stranger-ca.pem');
    writeFileSync(stranger, createCertificateAuthority({ commonName: 'stranger' }).certificatePem);
    await expect(
      EtcdMetadataStore.connect({
        endpoints: etcd.endpoints,
        requestTimeoutMs,
        tls: { ...certificates.services.controller, caFile: stranger },
      }),
    ).rejects.toMatchObject({ code: 'METADATA_STORE_UNAVAILABLE' });
  });

  it('trusts what the CA file says now on its next connection, without a restart', async () => {
    const clientDirectory = mkdtempSync(path.join(directory, 'client-'));
    const files = {
      caFile: path.join(clientDirectory, 'ca.pem'),
      certificateFile: path.join(clientDirectory, 'certificate.pem'),
      keyFile: path.join(clientDirectory, 'key.pem'),
    };
    const controller = certificates.services.controller;
    copyFileSync(controller.caFile, files.caFile);
    copyFileSync(controller.certificateFile, files.certificateFile);
    copyFileSync(controller.keyFile, files.keyFile);
    const store = await EtcdMetadataStore.connect({
      endpoints: etcd.endpoints,
      requestTimeoutMs,
      tls: files,
      tlsReloadIntervalMs: 50,
    });
    const member = etcd.members[0]!;
    const reconnect = async (): Promise<void> => {
      // A new connection: etcd restarted, so the next call's handshake reads the files anew.
      await member.stop();
      await member.start();
    };
    const readsWithin = async (timeoutMs: number): Promise<boolean> => {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        try {
          await store.get('/etcd-tls-spec/rotation');
          return true;
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      return false;
    };
    try {
      await store.put('/etcd-tls-spec/rotation', Buffer.from('before'));
      // The CA file now names a stranger: etcd's certificate is no longer trusted.
      writeFileSync(
        files.caFile,
        createCertificateAuthority({ commonName: 'rotated-away' }).certificatePem,
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      await reconnect();
      expect(await readsWithin(3_000)).toBe(false);
      // Back to the cluster's CA: read again, by the same store.
      copyFileSync(controller.caFile, files.caFile);
      expect(await readsWithin(20_000)).toBe(true);
      expect((await store.get('/etcd-tls-spec/rotation'))?.value.toString()).toBe('before');
    } finally {
      await store.close();
    }
  });

  it('names a missing CA file', async () => {
    const missing = path.join(directory, 'missing-ca.pem');
    await expect(
      EtcdMetadataStore.connect({
        endpoints: etcd.endpoints,
        tls: { ...certificates.services.controller, caFile: missing },
      }),
    ).rejects.toMatchObject({
      code: 'TLS_MATERIAL_INVALID',
      message: expect.stringContaining(`TLS file ${missing}: cannot be read (ENOENT)`),
    });
  });
});

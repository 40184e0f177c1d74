// Proves the pure-TypeScript certificate authority issues certificates that real TLS stacks
// accept: node:crypto parses and verifies them, `openssl verify -x509_strict` accepts the chain
// (where the binary exists, as on CI), and a TLS 1.3 handshake with mutual authentication
// succeeds between two of them and fails against a CA that did not issue them.
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createCertificateAuthority, issueCertificate } from './certificate-authority';

const opensslPresent = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

const directory = mkdtempSync(path.join(tmpdir(), 'spool-ca-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('certificate authority', () => {
  const authority = createCertificateAuthority({
    commonName: 'spool-test-ca',
    organization: 'Spool',
  });
  const server = issueCertificate(authority, {
    subject: { commonName: 'storage-node-1', organization: 'Spool' },
    hosts: ['localhost', '127.0.0.1', '::1'],
    uris: ['spool://service/storage-node'],
  });

  it('issues a CA and a certificate that node:crypto parses and verifies', () => {
    const ca = new X509Certificate(authority.certificatePem);
    const leaf = new X509Certificate(server.certificatePem);
    expect(ca.ca).toBe(true);
    expect(leaf.ca).toBe(false);
    expect(leaf.verify(ca.publicKey)).toBe(true);
    expect(leaf.checkIssued(ca)).toBe(true);
    expect(leaf.subject).toBe('O=Spool\nCN=storage-node-1');
    expect(leaf.issuer).toBe('O=Spool\nCN=spool-test-ca');
    expect(leaf.subjectAltName).toBe(
      'DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, ' +
        'URI:spool://service/storage-node',
    );
    expect(leaf.checkHost('localhost')).toBe('localhost');
    expect(leaf.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(leaf.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
  });

  it('refuses a validity window that ends before it begins', () => {
    expect(() =>
      issueCertificate(authority, {
        subject: { commonName: 'backwards' },
        notBefore: new Date(Date.now()),
        notAfter: new Date(Date.now() - 1000),
      }),
    ).toThrow(/notAfter > notBefore/);
  });

  it.skipIf(!opensslPresent)('passes openssl verify -x509_strict', () => {
    writeFileSync(path.join(directory, 'ca.pem'), authority.certificatePem);
    writeFileSync(path.join(directory, 'leaf.pem'), server.certificatePem);
    const output = execFileSync(
      'openssl',
      ['verify', '-x509_strict', '-CAfile', 'ca.pem', 'leaf.pem'],
      { cwd: directory, encoding: 'utf8' },
    );
    expect(output.trim()).toBe('leaf.pem: OK');
  });

  it('authenticates both ends of a TLS 1.3 handshake, and not under another CA', async () => {
    const client = issueCertificate(authority, { subject: { commonName: 'gateway' } });
    const stranger = createCertificateAuthority({ commonName: 'someone-else' });
    const listener = tls.createServer({
      key: server.privateKeyPem,
      cert: server.certificatePem,
      ca: authority.certificatePem,
      requestCert: true,
      rejectUnauthorized: true,
      minVersion: 'TLSv1.3',
    });
    const peers: string[] = [];
    listener.on('secureConnection', (socket) => {
      peers.push(String(socket.getPeerCertificate().subject.CN));
      socket.end();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const port = (listener.address() as { port: number }).port;
    const connect = (ca: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = tls.connect({
          host: '127.0.0.1',
          port,
          key: client.privateKeyPem,
          cert: client.certificatePem,
          ca,
        });
        socket.once('secureConnect', () => {
          resolve(socket.getProtocol() ?? '');
          socket.end();
        });
        socket.once('error', reject);
      });
    try {
      await expect(connect(authority.certificatePem)).resolves.toBe('TLSv1.3');
      await vi.waitFor(() => expect(peers).toEqual(['gateway']), { timeout: 2_000 });
      await expect(connect(stranger.certificatePem)).rejects.toThrow(
        /self-signed certificate in certificate chain|unable to verify the first certificate/,
      );
    } finally {
      await new Promise((resolve) => listener.close(resolve));
    }
  });
});

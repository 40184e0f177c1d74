// Proves the SDK's reading of a client.properties file and of its `ssl` setting: the gateway
// from spool.gateway (else bootstrap.servers), client.id, TLS files read and checked (PEM
// contents handed on), SSL with no files meaning the system's CAs, PLAINTEXT meaning no TLS,
// and INVALID_CONFIG errors that name the file and what is wrong (a SASL protocol, which is not
// offered yet; a missing certificate file; a key without its certificate).
import { writeDevelopmentCertificates } from '@spool/common';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { channelCredentialsOfSsl, readClientProperties } from './client-security';

const directory = mkdtempSync(path.join(tmpdir(), 'spool-client-properties-'));
const certificates = writeDevelopmentCertificates(path.join(directory, 'tls'), {
  hosts: ['localhost'],
});
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function propertiesFile(name: string, lines: readonly string[]): string {
  const file = path.join(directory, name);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

describe('readClientProperties', () => {
  it('reads the gateway, the client id and the TLS files', () => {
    const file = propertiesFile('secure.properties', [
      '# a comment',
      'spool.gateway=localhost:9443',
      'bootstrap.servers=localhost:9093',
      'client.id=billing',
      'security.protocol=SSL',
      `ssl.ca.location=${certificates.caFile}`,
      `ssl.certificate.location=${certificates.client.certificateFile}`,
      `ssl.key.location=${certificates.client.keyFile}`,
      'ssl.truststore.type=PEM',
    ]);
    expect(readClientProperties(file)).toEqual({
      brokers: ['localhost:9443'],
      clientId: 'billing',
      ssl: {
        ca: readFileSync(certificates.caFile),
        cert: readFileSync(certificates.client.certificateFile),
        key: readFileSync(certificates.client.keyFile),
      },
    });
  });

  it('takes bootstrap.servers without spool.gateway; SSL alone trusts the system', () => {
    const file = propertiesFile('system.properties', [
      'bootstrap.servers=a:1, b:2',
      'security.protocol=SSL',
    ]);
    expect(readClientProperties(file)).toEqual({ brokers: ['a:1', 'b:2'], ssl: true });
    const plain = propertiesFile('plain.properties', ['bootstrap.servers=a:1']);
    expect(readClientProperties(plain)).toEqual({ brokers: ['a:1'] });
    const sasl = propertiesFile('sasl-ssl.properties', [
      'bootstrap.servers=a:1',
      'security.protocol=SASL_SSL',
      'sasl.mechanism=SCRAM-SHA-256',
      'sasl.username=alice',
      'sasl.password=alice-secret',
    ]);
    expect(readClientProperties(sasl)).toEqual({
      brokers: ['a:1'],
      ssl: true,
      sasl: { mechanism: 'scram-sha-256', username: 'alice', password: 'alice-secret' },
    });
  });

  it('names the file and the problem', () => {
    const saslPlaintext = propertiesFile('sasl.properties', ['security.protocol=SASL_PLAINTEXT']);
    expect(() => readClientProperties(saslPlaintext)).toThrow(
      `${saslPlaintext}: security.protocol=SASL_PLAINTEXT is not offered; use PLAINTEXT, SSL or ` +
        'SASL_SSL (credentials go over TLS only)',
    );
    const noUser = propertiesFile('no-user.properties', ['security.protocol=SASL_SSL']);
    expect(() => readClientProperties(noUser)).toThrow(
      `${noUser}: security.protocol=SASL_SSL needs sasl.username and sasl.password`,
    );
    const missing = path.join(directory, 'missing.pem');
    const broken = propertiesFile('broken.properties', [
      'security.protocol=SSL',
      `ssl.certificate.location=${missing}`,
      `ssl.key.location=${certificates.client.keyFile}`,
    ]);
    expect(() => readClientProperties(broken)).toThrow(
      `${broken}: TLS file ${missing}: cannot be read (ENOENT)`,
    );
    const keyAlone = propertiesFile('key-alone.properties', [
      'security.protocol=SSL',
      `ssl.key.location=${certificates.client.keyFile}`,
    ]);
    expect(() => readClientProperties(keyAlone)).toThrow(/a certificate file must go with it/);
    expect(() => readClientProperties(path.join(directory, 'nowhere.properties'))).toThrow(
      /cannot read config file/,
    );
  });
});

describe('channelCredentialsOfSsl', () => {
  it('is plaintext without ssl and TLS with it; a key without cert is refused', () => {
    expect(channelCredentialsOfSsl(undefined)._isSecure()).toBe(false);
    expect(channelCredentialsOfSsl(false)._isSecure()).toBe(false);
    expect(channelCredentialsOfSsl(true)._isSecure()).toBe(true);
    expect(channelCredentialsOfSsl({ ca: readFileSync(certificates.caFile) })._isSecure()).toBe(
      true,
    );
    expect(() => channelCredentialsOfSsl({ key: 'k' })).toThrow(
      expect.objectContaining({
        code: 'INVALID_CONFIG',
        message: expect.stringMatching(/cert and key go together/),
      }),
    );
  });
});

// Proves client certificates on a TLS Kafka listener over real loopback sockets, with a handler
// of the test's own that answers every request with its correlation id: under
// ssl.client.auth=required a certificate from the CA is served as User:<its RFC 2253 subject>
// (special characters escaped as Java writes them), and no certificate, one from another CA or
// an expired one fail before any request is served; under requested, no certificate is
// User:ANONYMOUS and an untrusted one is refused; under none, a certificate is not asked for.
import {
  createCertificateAuthority,
  createLogger,
  issueCertificate,
  TransportSecurity,
  type CertificateAuthority,
} from '@spool/common';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import tls from 'node:tls';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KafkaRequestContext, KafkaRequestHandler } from './kafka-connection';
import { KafkaListener } from './kafka-listener';
import { KafkaListenerMetrics } from './kafka-listener-metrics';
import type { KafkaSslClientAuth } from './kafka-ssl-client-auth';

const logger = createLogger({ service: 'test', level: 'silent' });
const hourMs = 60 * 60 * 1000;

let directory: string;
let authority: CertificateAuthority;
let security: TransportSecurity;
const listeners: KafkaListener[] = [];

class PrincipalRecorder implements KafkaRequestHandler {
  readonly principals: string[] = [];
  serve(request: { correlationId: number }, context: KafkaRequestContext): Promise<Buffer> {
    this.principals.push(context.principal);
    const answer = Buffer.alloc(4);
    answer.writeInt32BE(request.correlationId, 0);
    return Promise.resolve(answer);
  }
}

beforeAll(() => {
  directory = mkdtempSync(path.join(tmpdir(), 'kafka-ssl-client-auth-'));
  authority = createCertificateAuthority({ commonName: 'Test cluster CA' });
  const server = issueCertificate(authority, {
    subject: { commonName: 'gateway' },
    hosts: ['localhost', '127.0.0.1'],
  });
  const files = {
    certificateFile: path.join(directory, 'gateway.pem'),
    keyFile: path.join(directory, 'gateway-key.pem'),
    caFile: path.join(directory, 'ca.pem'),
  };
  writeFileSync(files.certificateFile, server.certificatePem);
  writeFileSync(files.keyFile, server.privateKeyPem);
  writeFileSync(files.caFile, authority.certificatePem);
  security = TransportSecurity.load(files, {
    clientAuthentication: 'required',
    reloadIntervalMs: 0,
  });
});

afterAll(async () => {
  await Promise.all(listeners.map((listener) => listener.close(1_000)));
  security?.close();
  rmSync(directory, { recursive: true, force: true });
});

async function start(
  sslClientAuth: KafkaSslClientAuth,
): Promise<{ port: number; handler: PrincipalRecorder; registry: Registry }> {
  const handler = new PrincipalRecorder();
  const registry = new Registry();
  const listener = new KafkaListener({
    logger,
    handler,
    metrics: new KafkaListenerMetrics(registry, () => 0),
    requestBytesMax: 1024 * 1024,
    inFlightRequestsMax: 8,
    tls: security,
    sslClientAuth,
  });
  listeners.push(listener);
  return { port: await listener.listen('127.0.0.1', 0), handler, registry };
}

/** A request frame of the fixed header only (API key 0, version 0). */
function request(correlationId: number): Buffer {
  const frame = Buffer.alloc(4 + 8 + 4);
  frame.writeInt32BE(12, 0);
  frame.writeInt32BE(correlationId, 8);
  return frame;
}

/**
 * Connects with `certificate` (or none), sends one request and resolves with the correlation
 * id answered, or with the error that ended the connection first.
 */
function exchange(
  port: number,
  certificate: { certificatePem: string; privateKeyPem: string } | undefined,
): Promise<number | Error> {
  return new Promise((resolve) => {
    const socket = tls.connect({
      port,
      host: '127.0.0.1',
      servername: 'localhost',
      ca: authority.certificatePem,
      ...(certificate === undefined
        ? {}
        : { cert: certificate.certificatePem, key: certificate.privateKeyPem }),
    });
    let received = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(new Error('no answer within 5 s'));
    }, 5_000);
    socket.on('secureConnect', () => socket.write(request(7)));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length >= 8) {
        clearTimeout(timer);
        socket.end();
        resolve(received.readInt32BE(4));
      }
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      resolve(error);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(new Error('closed without an answer'));
    });
  });
}

const alice = () =>
  issueCertificate(authority, {
    subject: { commonName: 'alice', organizationalUnit: 'payments', organization: 'Example' },
  });

describe('client certificates on a TLS Kafka listener (ssl.client.auth)', () => {
  it('required: serves a certificate of the CA as User:<RFC 2253 subject>', async () => {
    const { port, handler } = await start('required');
    expect(await exchange(port, alice())).toBe(7);
    const escaped = issueCertificate(authority, {
      subject: { commonName: 'bob, "the builder"+1', organization: 'Example' },
    });
    expect(await exchange(port, escaped)).toBe(7);
    expect(handler.principals).toEqual([
      'User:CN=alice,OU=payments,O=Example',
      'User:CN=bob\\, \\"the builder\\"\\+1,O=Example',
    ]);
  });

  it('required: refuses no certificate, another CA and an expired certificate', async () => {
    const { port, handler, registry } = await start('required');
    const stranger = issueCertificate(createCertificateAuthority({ commonName: 'Other CA' }), {
      subject: { commonName: 'alice' },
    });
    const expired = issueCertificate(authority, {
      subject: { commonName: 'alice' },
      notBefore: new Date(Date.now() - 48 * hourMs),
      notAfter: new Date(Date.now() - 24 * hourMs),
    });
    for (const certificate of [undefined, stranger, expired]) {
      expect(await exchange(port, certificate)).toBeInstanceOf(Error);
    }
    expect(handler.principals).toEqual([]);
    const refused = await registry.getSingleMetricAsString('spool_kafka_connections_refused_total');
    expect(refused).toMatch(/ 3$/m);
  });

  it('requested: no certificate is User:ANONYMOUS, an untrusted one is refused', async () => {
    const { port, handler } = await start('requested');
    const stranger = issueCertificate(createCertificateAuthority({ commonName: 'Other CA' }), {
      subject: { commonName: 'alice' },
    });
    expect(await exchange(port, undefined)).toBe(7);
    expect(await exchange(port, stranger)).toBeInstanceOf(Error);
    expect(await exchange(port, alice())).toBe(7);
    expect(handler.principals).toEqual(['User:ANONYMOUS', 'User:CN=alice,OU=payments,O=Example']);
  });

  it('none: asks for no certificate, so every connection is User:ANONYMOUS', async () => {
    const { port, handler } = await start('none');
    expect(await exchange(port, alice())).toBe(7);
    expect(handler.principals).toEqual(['User:ANONYMOUS']);
  });
});

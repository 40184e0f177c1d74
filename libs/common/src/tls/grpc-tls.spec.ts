// Proves TLS on a real GrpcServer on loopback with files from the development CA: a client with
// a service's certificate is served over TLS; a plaintext client, a client without a
// certificate, one under another CA and one whose certificate expired are refused at the
// handshake; a service marked peersMustBeServices answers a client certificate without a service
// role CLUSTER_AUTHORIZATION_FAILED; a certificate rotated on disk is presented to new
// connections after the reload check, and a broken file on disk is refused while the certificate
// in use stays. Reloads are driven by checkForChange() instead of waiting for the timer.
import * as grpc from '@grpc/grpc-js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SpoolError } from '../errors';
import { callOnce, createGrpcClient, type UnaryMethod } from '../grpc-client';
import { GrpcServer } from '../grpc-server';
import { createLogger } from '../logger';
import { createCertificateAuthority, issueCertificate } from './certificate-authority';
import { channelCredentialsOf } from './grpc-tls';
import { writeDevelopmentCertificates } from './certificate-files';
import { serviceRoleUri } from './service-identity';
import { TlsMaterialError, type TlsFiles } from './tls-material';
import { TransportSecurity } from './transport-security';

const json = {
  serialize: (value: unknown) => Buffer.from(JSON.stringify(value)),
  deserialize: (bytes: Buffer) => JSON.parse(bytes.toString()) as unknown,
};
const echoDefinition: grpc.ServiceDefinition = {
  echo: {
    path: '/test.v1.EchoService/Echo',
    requestStream: false,
    responseStream: false,
    requestSerialize: json.serialize,
    requestDeserialize: json.deserialize,
    responseSerialize: json.serialize,
    responseDeserialize: json.deserialize,
  },
};
const EchoClient = grpc.makeGenericClientConstructor(echoDefinition, 'EchoService');
type Echo = UnaryMethod<{ text: string }, { text: string }>;

const logger = createLogger({ service: 'test', level: 'silent' });
const directory = mkdtempSync(path.join(tmpdir(), 'spool-grpc-tls-'));
const certificates = writeDevelopmentCertificates(path.join(directory, 'tls'), {
  hosts: ['localhost', '127.0.0.1'],
});
const opened: Array<{ close(): void } | GrpcServer> = [];

afterEach(async () => {
  for (const resource of opened.splice(0)) {
    if (resource instanceof GrpcServer) await resource.shutdown(100);
    else resource.close();
  }
});
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function security(files: TlsFiles): TransportSecurity {
  const loaded = TransportSecurity.load(files, {
    clientAuthentication: 'required',
    reloadIntervalMs: 0,
  });
  opened.push(loaded);
  return loaded;
}

async function startServer(
  files: TlsFiles,
  options: { peersMustBeServices?: boolean } = {},
): Promise<{ port: number; security: TransportSecurity }> {
  const serverSecurity = security(files);
  const server = new GrpcServer(logger, {
    maxMessageBytes: 1024 * 1024,
    descriptorSetPaths: [],
    transportSecurity: serverSecurity,
  });
  opened.push(server);
  server.addService(
    echoDefinition,
    { echo: async (request: { text: string }) => ({ text: request.text }) },
    options,
  );
  return { port: await server.listen('127.0.0.1', 0), security: serverSecurity };
}

function echoWith(port: number, credentials: grpc.ChannelCredentials): Promise<{ text: string }> {
  const client = createGrpcClient(EchoClient, `127.0.0.1:${port}`, {}, credentials);
  opened.push(client);
  const echo = (client as unknown as { echo: Echo }).echo;
  return callOnce(client, echo, { text: 'hello' }, { deadlineMs: 3_000 });
}

function writeIssued(name: string, issued: { certificatePem: string; privateKeyPem: string }) {
  const files = {
    certificateFile: path.join(directory, `${name}.pem`),
    keyFile: path.join(directory, `${name}-key.pem`),
    caFile: certificates.caFile,
  };
  writeFileSync(files.certificateFile, issued.certificatePem);
  writeFileSync(files.keyFile, issued.privateKeyPem);
  return files;
}

/** The subject CN the server presents to a new TLS connection. */
function presentedCommonName(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host: '127.0.0.1',
      port,
      ca: readFileSync(certificates.caFile),
      cert: readFileSync(certificates.services.gateway.certificateFile),
      key: readFileSync(certificates.services.gateway.keyFile),
      ALPNProtocols: ['h2'],
    });
    socket.once('secureConnect', () => {
      resolve(String(socket.getPeerCertificate().subject.CN));
      socket.destroy();
    });
    socket.once('error', reject);
  });
}

describe('gRPC over TLS', () => {
  it('serves a client with a certificate from the cluster CA over TLS 1.2+', async () => {
    const { port } = await startServer(certificates.services['storage-node']);
    const client = security(certificates.services.gateway);
    await expect(echoWith(port, client.channelCredentials())).resolves.toEqual({ text: 'hello' });
  });

  it('refuses plaintext, no certificate, another CA and an expired certificate', async () => {
    const { port } = await startServer(certificates.services['storage-node']);
    await expect(echoWith(port, grpc.credentials.createInsecure())).rejects.toMatchObject({
      code: 'UNAVAILABLE',
    });
    const withoutCertificate = security({ caFile: certificates.caFile });
    await expect(echoWith(port, withoutCertificate.channelCredentials())).rejects.toBeInstanceOf(
      SpoolError,
    );
    const stranger = createCertificateAuthority({ commonName: 'stranger-ca' });
    const strangerFiles = writeIssued(
      'stranger',
      issueCertificate(stranger, { subject: { commonName: 'stranger' } }),
    );
    writeFileSync(path.join(directory, 'stranger-ca.pem'), stranger.certificatePem);
    const strangerSecurity = security({ ...strangerFiles, caFile: certificates.caFile });
    await expect(echoWith(port, strangerSecurity.channelCredentials())).rejects.toMatchObject({
      code: 'UNAVAILABLE',
    });
    const expiredFiles = writeIssued(
      'expired',
      issueCertificate(readAuthority(), {
        subject: { commonName: 'expired' },
        uris: [serviceRoleUri('gateway')],
        notBefore: new Date(Date.now() - 2 * 86_400_000),
        notAfter: new Date(Date.now() - 86_400_000),
      }),
    );
    await expect(echoWith(port, security(expiredFiles).channelCredentials())).rejects.toMatchObject(
      { code: 'UNAVAILABLE' },
    );
  });

  it('answers a client certificate without a service role CLUSTER_AUTHORIZATION_FAILED', async () => {
    const { port } = await startServer(certificates.services['storage-node'], {
      peersMustBeServices: true,
    });
    const error = await echoWith(port, security(certificates.client).channelCredentials()).catch(
      (failure: unknown) => failure,
    );
    expect(error).toMatchObject({ code: 'CLUSTER_AUTHORIZATION_FAILED' });
    expect((error as Error).message).toMatch(/for Spool's services only.*CN=admin/);
    await expect(
      echoWith(port, security(certificates.services.gateway).channelCredentials()),
    ).resolves.toEqual({ text: 'hello' });
  });

  it('refuses to guard a service when ssl.client.auth=none cannot tell services apart', () => {
    const withoutClientAuthentication = TransportSecurity.load(certificates.services.gateway, {
      clientAuthentication: 'none',
      reloadIntervalMs: 0,
    });
    opened.push(withoutClientAuthentication);
    const server = new GrpcServer(logger, {
      maxMessageBytes: 1024 * 1024,
      descriptorSetPaths: [],
      transportSecurity: withoutClientAuthentication,
    });
    expect(() =>
      server.addService(
        echoDefinition,
        { echo: async (request: { text: string }) => request },
        { peersMustBeServices: true },
      ),
    ).toThrow(/ssl.client.auth=none cannot tell Spool services from clients/);
  });

  it('presents a rotated certificate to new connections and refuses a broken one', async () => {
    const original = issueCertificate(readAuthority(), {
      subject: { commonName: 'before-rotation' },
      hosts: ['127.0.0.1'],
      uris: [serviceRoleUri('storage-node')],
    });
    const files = writeIssued('rotating', original);
    const { port, security: serverSecurity } = await startServer(files);
    expect(await presentedCommonName(port)).toBe('before-rotation');

    writeIssued(
      'rotating',
      issueCertificate(readAuthority(), {
        subject: { commonName: 'after-rotation' },
        hosts: ['127.0.0.1'],
        uris: [serviceRoleUri('storage-node')],
      }),
    );
    expect(await serverSecurity.material.checkForChange()).toBe('reloaded');
    expect(await presentedCommonName(port)).toBe('after-rotation');
    const client = security(certificates.services.gateway);
    await expect(echoWith(port, client.channelCredentials())).resolves.toEqual({ text: 'hello' });

    writeFileSync(files.certificateFile, 'not a certificate\n');
    expect(await serverSecurity.material.checkForChange()).toBe('refused');
    expect(await presentedCommonName(port)).toBe('after-rotation');
  });

  it("accepts a service's certificate at any address, any other only at the host it names", async () => {
    // A storage node's certificate naming neither 127.0.0.1 nor localhost, as a pod's cannot
    // name the IP it will have.
    const elsewhere = writeIssued(
      'storage-elsewhere',
      issueCertificate(readAuthority(), {
        subject: { commonName: 'spool-storage-node' },
        hosts: ['storage.elsewhere.example'],
        uris: [serviceRoleUri('storage-node')],
      }),
    );
    const { port } = await startServer(elsewhere);
    const service = security(certificates.services.gateway);
    await expect(echoWith(port, service.channelCredentials())).resolves.toEqual({ text: 'hello' });
    // A client (the SDK's path) checks the host: the same server is refused.
    await expect(
      echoWith(port, channelCredentialsOf(security(certificates.client).material)),
    ).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    // The data port's connections follow the same rule.
    const dataServer = tls.createServer(security(elsewhere).tlsServerOptions(), (socket) =>
      socket.end(),
    );
    opened.push(dataServer);
    await new Promise<void>((resolve) => dataServer.listen(0, '127.0.0.1', resolve));
    const dataPort = (dataServer.address() as { port: number }).port;
    await expect(handshake(dataPort, service.tlsConnectOptions())).resolves.toBe('connected');

    // A certificate without a service role must name the host, even to a service.
    const notService = writeIssued(
      'not-a-service',
      issueCertificate(readAuthority(), {
        subject: { commonName: 'someone' },
        hosts: ['storage.elsewhere.example'],
      }),
    );
    const second = await startServer(notService);
    await expect(echoWith(second.port, service.channelCredentials())).rejects.toMatchObject({
      code: 'UNAVAILABLE',
    });
    const secondDataServer = tls.createServer(security(notService).tlsServerOptions(), (socket) =>
      socket.end(),
    );
    opened.push(secondDataServer);
    await new Promise<void>((resolve) => secondDataServer.listen(0, '127.0.0.1', resolve));
    const secondDataPort = (secondDataServer.address() as { port: number }).port;
    await expect(handshake(secondDataPort, service.tlsConnectOptions())).rejects.toThrow(
      /Hostname\/IP does not match certificate's altnames/,
    );
  });

  it('names the file when the first load fails', () => {
    expect(() =>
      TransportSecurity.load(
        { ...certificates.services.gateway, keyFile: path.join(directory, 'missing-key.pem') },
        { clientAuthentication: 'required', reloadIntervalMs: 0 },
      ),
    ).toThrow(new RegExp(`TLS file ${directory}/missing-key.pem: cannot be read \\(ENOENT\\)`));
    const mismatched = {
      ...certificates.services.gateway,
      keyFile: certificates.services.controller.keyFile,
    };
    const error = (() => {
      try {
        TransportSecurity.load(mismatched, { clientAuthentication: 'required' });
      } catch (failure) {
        return failure;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(TlsMaterialError);
    expect(error).toMatchObject({ code: 'TLS_MATERIAL_INVALID', file: mismatched.keyFile });
    expect((error as Error).message).toMatch(/the key does not belong to the certificate/);
  });
});

/** Resolves when a node:tls connection with these options completes its handshake. */
function handshake(port: number, options: tls.ConnectionOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ ...options, host: '127.0.0.1', port });
    socket.once('secureConnect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', reject);
  });
}

function readAuthority(): { certificatePem: string; privateKeyPem: string } {
  return {
    certificatePem: readFileSync(certificates.caFile, 'utf8'),
    privateKeyPem: readFileSync(path.join(certificates.directory, 'ca-key.pem'), 'utf8'),
  };
}

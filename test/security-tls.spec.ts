// Proves `spool dev --secure` end to end with real processes and sockets: every service runs
// TLS with mutual authentication under the CA generated into <data-dir>/tls; the CLI (through
// --command-config <data-dir>/client.properties) and the SDK (readClientProperties) produce and
// consume; the gateway refuses a plaintext client, a client certificate from another CA and an
// expired one from the cluster's CA; a storage node answers Append from a client certificate
// (no service role) CLUSTER_AUTHORIZATION_FAILED and writes nothing, and a gateway's
// BeginControllerEpoch (only a controller may announce itself to a broker); a gateway certificate
// reissued on disk is what new connections are shown, without a restart (every service checks
// its files every 200 ms here, SPOOL_SSL_RELOAD_INTERVAL_MS).
import * as grpc from '@grpc/grpc-js';
import { readClientProperties, Spool } from '@spool/client';
import {
  callOnce,
  createCertificateAuthority,
  createGrpcClient,
  issueCertificate,
  serviceRoleUri,
  SpoolError,
  TransportSecurity,
  type TlsFiles,
} from '@spool/common';
import { Acks, GatewayServiceClient, StorageServiceClient } from '@spool/protocol';
import { encodeRecordBatch } from '@spool/record-batch';
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from './support/cli-process';
import { startSpoolDev, type SpoolDevProcess } from './support/spool-dev-process';

let dev: SpoolDevProcess;
let clientProperties: string;
let tlsDirectory: string;
const opened: Array<{ close(): void }> = [];

beforeAll(async () => {
  dev = await startSpoolDev(['--secure', '--nodes', '1'], {
    env: { SPOOL_SSL_RELOAD_INTERVAL_MS: '200' },
  });
  clientProperties = path.join(dev.dataDirectory, 'client.properties');
  tlsDirectory = path.join(dev.dataDirectory, 'tls');
}, 60_000);

afterAll(async () => {
  for (const resource of opened.splice(0)) resource.close();
  await dev?.stop();
});

function security(files: TlsFiles): TransportSecurity {
  const loaded = TransportSecurity.load(files, {
    clientAuthentication: 'required',
    reloadIntervalMs: 0,
  });
  opened.push(loaded);
  return loaded;
}

function tlsFilesOf(name: string): Required<TlsFiles> {
  return {
    certificateFile: path.join(tlsDirectory, `${name}.pem`),
    keyFile: path.join(tlsDirectory, `${name}-key.pem`),
    caFile: path.join(tlsDirectory, 'ca.pem'),
  };
}

function clusterAuthority(): { certificatePem: string; privateKeyPem: string } {
  return {
    certificatePem: readFileSync(path.join(tlsDirectory, 'ca.pem'), 'utf8'),
    privateKeyPem: readFileSync(path.join(tlsDirectory, 'ca-key.pem'), 'utf8'),
  };
}

function writeIssued(name: string, issued: { certificatePem: string; privateKeyPem: string }) {
  const files = tlsFilesOf(name);
  writeFileSync(files.keyFile, issued.privateKeyPem);
  writeFileSync(files.certificateFile, issued.certificatePem);
  return files;
}

/** DescribeCluster on the gateway with `credentials`: the cluster id, or the error's code. */
async function describeWith(credentials: grpc.ChannelCredentials): Promise<string> {
  const client = createGrpcClient(GatewayServiceClient, dev.gatewayAddress, {}, credentials);
  opened.push(client);
  try {
    const response = await callOnce(client, client.describeCluster, {}, { deadlineMs: 5_000 });
    return `cluster ${response.clusterId}`;
  } catch (error) {
    return (error as SpoolError).code;
  }
}

function storageNodeAddress(): string {
  const node = dev.processes.find((entry) => entry.role === 'storage-node');
  return `127.0.0.1:${node!.ports.grpc}`;
}

function cli(argv: readonly string[], input = '') {
  return runCli(['--command-config', clientProperties, ...argv], input);
}

describe('spool dev --secure', () => {
  it('produces and consumes with the CLI and the SDK through client.properties', async () => {
    expect(readFileSync(clientProperties, 'utf8')).toMatch(/^security\.protocol=SASL_SSL$/m);
    const created = await cli(['topic', 'create', 'secure-orders', '--partitions', '1']);
    expect(created.stderr).not.toMatch(/spool: [A-Z_]+:/);
    expect(created.exitCode).toBe(0);
    const produced = await cli(['produce', 'secure-orders'], 'a\nb\nc\n');
    expect(produced.exitCode, produced.stderr).toBe(0);

    const spool = new Spool({ ...readClientProperties(clientProperties), logLevel: 'silent' });
    try {
      const producer = spool.producer();
      await producer.send({ topic: 'secure-orders', messages: [{ value: 'd' }, { value: 'e' }] });
      await producer.close();
      const consumer = spool.consumer({ groupId: 'secure-readers', requestTimeoutMs: 5_000 });
      const values: string[] = [];
      try {
        await consumer.subscribe({ topic: 'secure-orders', fromBeginning: true });
        await consumer.run({
          eachMessage: async ({ message }) => {
            values.push(message.value?.toString() ?? '');
          },
        });
        await vi.waitFor(() => expect(values).toEqual(['a', 'b', 'c', 'd', 'e']), {
          timeout: 20_000,
          interval: 50,
        });
      } finally {
        await consumer.disconnect();
      }
    } finally {
      await spool.close();
    }
    const consumed = await cli([
      ...['consume', 'secure-orders', '--from-beginning', '--max-messages', '5'],
    ]);
    expect(consumed.exitCode, consumed.stderr).toBe(0);
    expect(consumed.stdout.split('\n').filter(Boolean)).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('refuses plaintext, another CA and an expired certificate at the gateway', async () => {
    expect(await describeWith(security(tlsFilesOf('client')).channelCredentials())).toMatch(
      /^cluster /,
    );
    expect(await describeWith(grpc.credentials.createInsecure())).toBe('UNAVAILABLE');
    const plaintextCli = await runCli(['topic', 'list', '--gateway', dev.gatewayAddress]);
    expect(plaintextCli.exitCode).not.toBe(0);

    const stranger = createCertificateAuthority({ commonName: 'someone-else' });
    const strangerFiles = writeIssued(
      'stranger',
      issueCertificate(stranger, { subject: { commonName: 'mallory' } }),
    );
    expect(await describeWith(security(strangerFiles).channelCredentials())).toBe('UNAVAILABLE');

    const expiredFiles = writeIssued(
      'expired',
      issueCertificate(clusterAuthority(), {
        subject: { commonName: 'admin' },
        notBefore: new Date(Date.now() - 2 * 86_400_000),
        notAfter: new Date(Date.now() - 86_400_000),
      }),
    );
    expect(await describeWith(security(expiredFiles).channelCredentials())).toBe('UNAVAILABLE');
  });

  it('answers Append from a client certificate CLUSTER_AUTHORIZATION_FAILED, writing nothing', async () => {
    const created = await cli(['topic', 'create', 'secure-appends', '--partitions', '1']);
    expect(created.exitCode, created.stderr).toBe(0);
    const records = encodeRecordBatch({
      baseOffset: 0n,
      records: [{ key: null, value: Buffer.from('forged'), timestampMs: BigInt(Date.now()) }],
    });
    const asClient = createGrpcClient(
      StorageServiceClient,
      storageNodeAddress(),
      {},
      security(tlsFilesOf('client')).channelCredentials(),
    );
    opened.push(asClient);
    const refused = await callOnce(asClient, asClient.append, {
      partitions: [{ topic: 'secure-appends', partition: 0, records }],
      acks: Acks.ACKS_ALL,
      timeoutMs: 5_000,
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SpoolError);
    expect(refused).toMatchObject({ code: 'CLUSTER_AUTHORIZATION_FAILED' });
    expect((refused as Error).message).toMatch(/Append is for Spool's services only.*CN=admin/);

    const asGateway = createGrpcClient(
      StorageServiceClient,
      storageNodeAddress(),
      {},
      security(tlsFilesOf('gateway')).channelCredentials(),
    );
    opened.push(asGateway);
    const offsets = await vi.waitFor(
      async () => {
        const response = await callOnce(asGateway, asGateway.listOffsets, {
          partitions: [{ topic: 'secure-appends', partition: 0, spec: 2, timestampMs: 0n }],
        });
        expect(response.results[0]?.error).toBeUndefined();
        return response;
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(offsets.results[0]?.offset).toBe(0n);

    // A gateway is a service, but only a controller may announce a controller to a broker.
    const announced = await callOnce(asGateway, asGateway.beginControllerEpoch, {
      controllerAddress: '127.0.0.1:1',
      controllerEpoch: 1_000_000n,
      brokerId: 0,
    }).catch((error: unknown) => error);
    expect(announced).toMatchObject({ code: 'CLUSTER_AUTHORIZATION_FAILED' });
    expect((announced as Error).message).toMatch(/for controllers only.*gateway role/);
  });

  it('shows new connections a gateway certificate reissued on disk, without a restart', async () => {
    const presented = (): Promise<string> =>
      new Promise((resolve, reject) => {
        const [host, port] = dev.gatewayAddress.split(':') as [string, string];
        const client = tlsFilesOf('client');
        const socket = tls.connect({
          host,
          port: Number(port),
          ca: readFileSync(client.caFile),
          cert: readFileSync(client.certificateFile),
          key: readFileSync(client.keyFile),
          ALPNProtocols: ['h2'],
        });
        socket.once('secureConnect', () => {
          resolve(String(socket.getPeerCertificate().subject.CN));
          socket.destroy();
        });
        socket.once('error', reject);
      });
    expect(await presented()).toBe('spool-gateway');
    writeIssued(
      'gateway',
      issueCertificate(clusterAuthority(), {
        subject: { commonName: 'spool-gateway-rotated', organization: 'Spool' },
        hosts: ['localhost', '127.0.0.1', '::1'],
        uris: [serviceRoleUri('gateway')],
      }),
    );
    await vi.waitFor(async () => expect(await presented()).toBe('spool-gateway-rotated'), {
      timeout: 10_000,
      interval: 100,
    });
    expect(await describeWith(security(tlsFilesOf('client')).channelCredentials())).toMatch(
      /^cluster /,
    );
  });
});

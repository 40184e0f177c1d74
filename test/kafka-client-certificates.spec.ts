// Proves kafka.ssl.client.auth=required end to end on real processes: `spool dev --secure` with
// SPOOL_KAFKA_SSL_CLIENT_AUTH=required in its environment (it reaches the gateway as any
// setting does). kcat (librdkafka) with the admin's SASL credentials and the client certificate
// of client.properties lists the cluster and produces; the same credentials without a
// certificate, or with a certificate from another CA, fail the TLS handshake, are counted in
// spool_kafka_connections_refused_total, and write nothing.
import { createCertificateAuthority, issueCertificate } from '@spool/common';
import { readClientProperties, Spool } from '@spool/client';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './support/cli-process';
import { scrape, sumOf } from './support/prometheus-scrape';
import { startSpoolDev, type SpoolDevProcess } from './support/spool-dev-process';

const kcatTimeoutMs = 20_000;

let dev: SpoolDevProcess;
let properties: Map<string, string>;
let propertiesFile: string;
let kafkaPort: number;
let metricsPort: number;

beforeAll(async () => {
  dev = await startSpoolDev(['--secure', '--nodes', '1'], {
    env: { SPOOL_KAFKA_SSL_CLIENT_AUTH: 'required' },
  });
  propertiesFile = path.join(dev.dataDirectory, 'client.properties');
  properties = new Map(
    readFileSync(propertiesFile, 'utf8')
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  const gateway = dev.processes.find((entry) => entry.role === 'gateway')!;
  kafkaPort = (gateway.ports as { kafka?: number }).kafka!;
  metricsPort = gateway.ports.metrics;
  const topic = await runCli([
    ...['--command-config', propertiesFile],
    ...['topic', 'create', 'certified', '--partitions', '1'],
  ]);
  expect(topic.exitCode, topic.stderr).toBe(0);
}, 60_000);

afterAll(async () => {
  await dev?.stop();
});

/** kcat as the admin over SASL_SSL with `certificate` (or none); rejects with its stderr. */
function kcat(
  certificate: { certificateFile: string; keyFile: string } | undefined,
  args: readonly string[],
  input?: string,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'kcat',
      [
        ...['-b', `localhost:${kafkaPort}`],
        ...['-X', 'security.protocol=SASL_SSL'],
        ...['-X', `ssl.ca.location=${properties.get('ssl.ca.location')!}`],
        ...['-X', 'sasl.mechanisms=SCRAM-SHA-512'],
        ...['-X', `sasl.username=${properties.get('sasl.username')!}`],
        ...['-X', `sasl.password=${properties.get('sasl.password')!}`],
        ...(certificate === undefined
          ? []
          : [
              ...['-X', `ssl.certificate.location=${certificate.certificateFile}`],
              ...['-X', `ssl.key.location=${certificate.keyFile}`],
            ]),
        // One attempt's worth: a refused handshake is retried by librdkafka until this.
        ...['-m', '8'],
        ...args,
      ],
      { timeout: kcatTimeoutMs },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`kcat ${args.join(' ')} failed: ${stderr}`));
        else resolve(stdout);
      },
    );
    if (input !== undefined) child.stdin!.end(input);
  });
}

async function highWatermark(): Promise<string> {
  const spool = new Spool({ ...readClientProperties(propertiesFile), logLevel: 'silent' });
  try {
    const [partition] = await spool.admin().fetchTopicOffsets('certified');
    return String(partition!.high);
  } finally {
    await spool.close();
  }
}

describe('kafka.ssl.client.auth=required on the Kafka listener', () => {
  it('serves a client certificate of the cluster CA', async () => {
    const certificate = {
      certificateFile: properties.get('ssl.certificate.location')!,
      keyFile: properties.get('ssl.key.location')!,
    };
    expect(await kcat(certificate, ['-L', '-t', 'certified'])).toContain('topic "certified"');
    await kcat(certificate, ['-P', '-t', 'certified', '-p', '0'], 'one\ntwo\n');
    expect(await highWatermark()).toBe('2');
  });

  it('refuses no certificate and one from another CA at the handshake, writing nothing', async () => {
    const before =
      sumOf([await scrape(metricsPort)], 'spool_kafka_connections_refused_total', {}) ?? 0;
    const stranger = issueCertificate(createCertificateAuthority({ commonName: 'Other CA' }), {
      subject: { commonName: 'admin' },
    });
    const strangerFiles = {
      certificateFile: path.join(dev.dataDirectory, 'stranger.pem'),
      keyFile: path.join(dev.dataDirectory, 'stranger-key.pem'),
    };
    writeFileSync(strangerFiles.certificateFile, stranger.certificatePem);
    writeFileSync(strangerFiles.keyFile, stranger.privateKeyPem);
    for (const certificate of [undefined, strangerFiles]) {
      await expect(
        kcat(certificate, ['-P', '-t', 'certified', '-p', '0'], 'intruder\n'),
      ).rejects.toThrow(/SSL|handshake|certificate|Disconnected|transport/i);
    }
    expect(await highWatermark()).toBe('2');
    const after =
      sumOf([await scrape(metricsPort)], 'spool_kafka_connections_refused_total', {}) ?? 0;
    expect(after).toBeGreaterThanOrEqual(before + 2);
  });
});

import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { SpoolSslOptions } from '@spool/client';
import {
  developmentCertificateFiles,
  writeDevelopmentCertificates,
  type DevelopmentCertificates,
  type ServiceRole,
} from '@spool/common';

/**
 * `spool dev --secure`: the cluster's certificates and the client settings, in the data
 * directory.
 *
 *   <data-dir>/tls/            a CA (kept across starts, so issued certificates stay trusted),
 *                              one certificate per service role (SAN: localhost, 127.0.0.1, ::1
 *                              and spool://service/<role>), one client certificate (CN=admin)
 *   <data-dir>/client.properties   what a client needs: Kafka's and librdkafka's keys
 *                              (security.protocol=SSL, ssl.*.location, PEM trust and key stores
 *                              for Java) and spool.gateway for the CLI and the SDK
 *
 * Every start issues the services' and the client's certificates again (a year each), so a
 * development cluster never runs into an expiry; a running service picks a reissued file up
 * within its ssl.reload.interval.ms.
 */

/** The names the development certificates are valid for: the cluster runs on loopback. */
const developmentHosts = ['localhost', '127.0.0.1', '::1'];

export function tlsDirectoryOf(dataDirectory: string): string {
  return path.join(dataDirectory, 'tls');
}

export function clientPropertiesPathOf(dataDirectory: string): string {
  return path.join(dataDirectory, 'client.properties');
}

export function prepareDevCertificates(dataDirectory: string): DevelopmentCertificates {
  return writeDevelopmentCertificates(tlsDirectoryOf(dataDirectory), { hosts: developmentHosts });
}

/** A service's flags for TLS with mTLS under the development CA. */
export function serviceSecurityArguments(dataDirectory: string, role: ServiceRole): string[] {
  const files = developmentCertificateFiles(tlsDirectoryOf(dataDirectory)).services[role];
  return [
    ...['--security-protocol', 'SSL'],
    ...['--ssl-certificate-location', files.certificateFile],
    ...['--ssl-key-location', files.keyFile],
    ...['--ssl-ca-location', files.caFile],
  ];
}

/** The SDK's `ssl` for the client certificate (spool dev's own readiness checks use it). */
export function devClientSsl(dataDirectory: string): SpoolSslOptions {
  const files = developmentCertificateFiles(tlsDirectoryOf(dataDirectory)).client;
  return {
    ca: readFileSync(files.caFile),
    cert: readFileSync(files.certificateFile),
    key: readFileSync(files.keyFile),
  };
}

/**
 * The gateway as TLS clients name it: by its DNS name, which the certificate holds too, since
 * grpc-js sends the target's host as the TLS server name and an IP address there is deprecated
 * (RFC 6066, Node's DEP0123 warning on every command).
 */
export function clientGatewayAddress(gatewayPort: number): string {
  return `localhost:${gatewayPort}`;
}

/** Writes client.properties whole or not at all. */
export function writeClientProperties(dataDirectory: string, gatewayPort: number): string {
  const files = developmentCertificateFiles(tlsDirectoryOf(dataDirectory));
  const keystore = path.join(files.directory, 'client-keystore.pem');
  // Java's PEM key store holds the key and its certificate chain in one file.
  writeFileSync(
    keystore,
    `${readFileSync(files.client.keyFile, 'utf8')}${readFileSync(files.client.certificateFile, 'utf8')}`,
    { mode: 0o600 },
  );
  const lines = [
    '# Written by spool dev --secure: how a client reaches this cluster.',
    '# spool --command-config <this file> ...; new Spool(readClientProperties(<this file>)) in the SDK.',
    `spool.gateway=${clientGatewayAddress(gatewayPort)}`,
    'security.protocol=SSL',
    '# librdkafka (kcat, confluent-kafka) and this SDK',
    `ssl.ca.location=${files.caFile}`,
    `ssl.certificate.location=${files.client.certificateFile}`,
    `ssl.key.location=${files.client.keyFile}`,
    '# Java clients',
    'ssl.truststore.type=PEM',
    `ssl.truststore.location=${files.caFile}`,
    'ssl.keystore.type=PEM',
    `ssl.keystore.location=${keystore}`,
    '',
  ];
  const target = clientPropertiesPathOf(dataDirectory);
  const temporary = `${target}.${process.pid}.tmp`;
  writeFileSync(temporary, lines.join('\n'));
  renameSync(temporary, target);
  return target;
}

import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { Spool, type SpoolSslOptions } from '@spool/client';
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
 *                              (security.protocol=SASL_SSL, sasl.mechanism=SCRAM-SHA-512, the
 *                              admin user in sasl.username/sasl.password for librdkafka and the
 *                              SDK and in sasl.jaas.config for Java, ssl.*.location, PEM trust
 *                              and key stores for Java) and spool.gateway for the CLI and SDK
 *
 * The Kafka listener is SASL_SSL (SCRAM-SHA-256/512 and PLAIN) and the gateway's gRPC requires
 * credentials (grpc.authentication=required). The admin user is created at every start with a
 * new random password (both SCRAM mechanisms), by the CLI's client certificate (CN=admin, which
 * the gateway authenticates as User:admin), and written to client.properties (mode 0600).
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

/** A service's flags for TLS with mTLS under the development CA; the gateway's SASL too. */
export function serviceSecurityArguments(dataDirectory: string, role: ServiceRole): string[] {
  const files = developmentCertificateFiles(tlsDirectoryOf(dataDirectory)).services[role];
  return [
    ...['--security-protocol', 'SSL'],
    ...['--ssl-certificate-location', files.certificateFile],
    ...['--ssl-key-location', files.keyFile],
    ...['--ssl-ca-location', files.caFile],
    ...(role === 'gateway'
      ? [
          ...['--kafka-security-protocol', 'SASL_SSL', '--grpc-authentication', 'required'],
          // ACLs on, as the secure default: the admin user (SCRAM, or the CLI's CN=admin
          // certificate) may do everything; everyone else needs an ACL.
          ...['--authorizer', 'acl', '--super-users', `User:${devAdminUser}`],
        ]
      : []),
  ];
}

/** The admin user spool dev --secure creates. */
export const devAdminUser = 'admin';

export interface DevAdminCredentials {
  readonly user: string;
  readonly password: string;
}

/** A new random password for the admin user (letters and digits: safe in every file format). */
export function newDevAdminCredentials(): DevAdminCredentials {
  return { user: devAdminUser, password: randomBytes(18).toString('hex') };
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
export function writeClientProperties(
  dataDirectory: string,
  gatewayPort: number,
  admin: DevAdminCredentials,
): string {
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
    'security.protocol=SASL_SSL',
    'sasl.mechanism=SCRAM-SHA-512',
    '# librdkafka (kcat, confluent-kafka) and this SDK',
    `sasl.username=${admin.user}`,
    `sasl.password=${admin.password}`,
    `ssl.ca.location=${files.caFile}`,
    `ssl.certificate.location=${files.client.certificateFile}`,
    `ssl.key.location=${files.client.keyFile}`,
    '# Java clients',
    'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required ' +
      `username="${admin.user}" password="${admin.password}";`,
    'ssl.truststore.type=PEM',
    `ssl.truststore.location=${files.caFile}`,
    'ssl.keystore.type=PEM',
    `ssl.keystore.location=${keystore}`,
    '',
  ];
  const target = clientPropertiesPathOf(dataDirectory);
  const temporary = `${target}.${process.pid}.tmp`;
  writeFileSync(temporary, lines.join('\n'), { mode: 0o600 });
  renameSync(temporary, target);
  return target;
}

/**
 * Creates (or resets) the admin user through the gateway, authenticated by the CLI's client
 * certificate; both SCRAM mechanisms, so Kafka clients may pick either (PLAIN checks either).
 */
export async function createDevAdminUser(
  dataDirectory: string,
  gatewayPort: number,
  admin: DevAdminCredentials,
): Promise<void> {
  const spool = new Spool({
    brokers: [clientGatewayAddress(gatewayPort)],
    clientId: 'spool-dev',
    logLevel: 'silent',
    ssl: devClientSsl(dataDirectory),
  });
  try {
    await spool.admin().alterUserScramCredentials({
      upsertions: (['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const).map((mechanism) => ({
        user: admin.user,
        mechanism,
        password: admin.password,
      })),
    });
  } finally {
    await spool.close();
  }
}

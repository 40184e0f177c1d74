// TLS between the SDK and the gateways, and the client.properties file that describes how to
// reach a cluster (`spool dev --secure` writes one into its data directory).
//
// `ssl` follows KafkaJS: `true` for TLS trusting the system's CAs, or PEM contents `{ ca, cert,
// key }` for a private CA and a client certificate (mTLS). The gateway's certificate is checked
// against the host of the broker address, as Kafka's ssl.endpoint.identification.algorithm=https.
//
// `sasl` follows KafkaJS too: `{ mechanism, username, password }`. On gRPC every call carries
// `authorization: Basic base64(username:password)` (RFC 7617) as call credentials, which
// grpc-js sends over TLS only; the gateway checks the password against the user's stored SCRAM
// credential (the same one a Kafka client's SCRAM or PLAIN exchange uses) and remembers a
// verified pair for a minute, so a call does not cost a PBKDF2. The mechanism is what a Kafka
// client would use; gRPC needs only the user and the password.
//
// client.properties uses Kafka's and librdkafka's keys, so one file serves kcat, confluent-kafka
// and this SDK: security.protocol (PLAINTEXT, SSL, SASL_SSL), ssl.ca.location,
// ssl.certificate.location, ssl.key.location, sasl.mechanism, sasl.username and sasl.password
// (librdkafka's; Java's sasl.jaas.config beside them is not read), client.id, and spool.gateway
// (the gRPC gateway's host:port, which Kafka clients ignore) or else bootstrap.servers. Other
// keys belong to other clients (ssl.truststore.*, ssl.keystore.* for Java) and are left alone.
import * as grpc from '@grpc/grpc-js';
import { checkTlsMaterial, readConfigFile, TlsMaterialError } from '@spool/common';
import type { SpoolConfig } from './config';
import { ClientErrorCode, clientError } from './errors';

export interface SpoolSslOptions {
  /** ca: PEM bundle the gateway's certificate is checked against; the system's if absent. */
  readonly ca?: string | Buffer;
  /** cert: PEM client certificate chain (mTLS); with `key`. */
  readonly cert?: string | Buffer;
  /** key: PEM private key of `cert`. */
  readonly key?: string | Buffer;
}

export interface SpoolSaslOptions {
  readonly mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512';
  readonly username: string;
  readonly password: string;
}

const saslMechanismNames = ['plain', 'scram-sha-256', 'scram-sha-512'];

/** `ssl`'s channel credentials with `sasl`'s call credentials on every call. */
export function channelCredentialsOf(
  ssl: boolean | SpoolSslOptions | undefined,
  sasl: SpoolSaslOptions | undefined,
): grpc.ChannelCredentials {
  const channel = channelCredentialsOfSsl(ssl);
  if (sasl === undefined) return channel;
  if (
    typeof sasl !== 'object' ||
    sasl === null ||
    !saslMechanismNames.includes(String(sasl.mechanism).toLowerCase()) ||
    typeof sasl.username !== 'string' ||
    sasl.username === '' ||
    sasl.username.includes(':') ||
    typeof sasl.password !== 'string' ||
    sasl.password === ''
  ) {
    throw clientError(
      ClientErrorCode.InvalidConfig,
      'invalid value for setting sasl: expected { mechanism: plain|scram-sha-256|scram-sha-512, ' +
        'username, password } with a username without ":" and a password',
    );
  }
  if (ssl === undefined || ssl === false) {
    throw clientError(
      ClientErrorCode.InvalidConfig,
      'invalid value for setting sasl: credentials are sent over TLS only; set ssl as well',
    );
  }
  const authorization = `Basic ${Buffer.from(`${sasl.username}:${sasl.password}`).toString('base64')}`;
  return channel.compose(
    grpc.credentials.createFromMetadataGenerator((_options, callback) => {
      const metadata = new grpc.Metadata();
      metadata.set('authorization', authorization);
      callback(null, metadata);
    }),
  );
}

/** The channel credentials of a `ssl` setting; insecure when it is absent or false. */
export function channelCredentialsOfSsl(
  ssl: boolean | SpoolSslOptions | undefined,
): grpc.ChannelCredentials {
  if (ssl === undefined || ssl === false) return grpc.credentials.createInsecure();
  if (ssl === true) return grpc.credentials.createSsl();
  if (typeof ssl !== 'object' || ssl === null) {
    throw clientError(
      ClientErrorCode.InvalidConfig,
      `invalid value for setting ssl: ${String(ssl)}; expected true, false or { ca, cert, key }`,
    );
  }
  if ((ssl.cert === undefined) !== (ssl.key === undefined)) {
    throw clientError(
      ClientErrorCode.InvalidConfig,
      'invalid value for setting ssl: cert and key go together (a client certificate and its key)',
    );
  }
  const pem = (value: string | Buffer | undefined): Buffer | null =>
    value === undefined ? null : Buffer.isBuffer(value) ? value : Buffer.from(value);
  try {
    return grpc.credentials.createSsl(pem(ssl.ca), pem(ssl.key), pem(ssl.cert));
  } catch (error) {
    throw clientError(
      ClientErrorCode.InvalidConfig,
      `invalid value for setting ssl: ${(error as Error).message}`,
    );
  }
}

/**
 * The SpoolConfig a client.properties file describes: gateway, client id and TLS (the files read
 * and checked now). A missing or bad file, an unknown security.protocol or a certificate file
 * that does not hold what it should is an INVALID_CONFIG error naming the file and the key.
 */
export function readClientProperties(file: string): SpoolConfig {
  let values: Map<string, string>;
  try {
    values = readConfigFile(file);
  } catch (error) {
    throw clientError(ClientErrorCode.InvalidConfig, (error as Error).message);
  }
  const gateways = values.get('spool.gateway') ?? values.get('bootstrap.servers');
  const protocol = values.get('security.protocol') ?? 'PLAINTEXT';
  if (protocol !== 'PLAINTEXT' && protocol !== 'SSL' && protocol !== 'SASL_SSL') {
    throw clientError(
      ClientErrorCode.InvalidConfig,
      `${file}: security.protocol=${protocol} is not offered; use PLAINTEXT, SSL or SASL_SSL ` +
        '(credentials go over TLS only)',
    );
  }
  const config: { -readonly [K in keyof SpoolConfig]: SpoolConfig[K] } = {};
  if (gateways !== undefined) {
    config.brokers = gateways.split(',').map((address) => address.trim());
  }
  const clientId = values.get('client.id');
  if (clientId !== undefined) config.clientId = clientId;
  if (protocol === 'SASL_SSL') {
    const mechanism = (values.get('sasl.mechanism') ?? 'SCRAM-SHA-512').toLowerCase();
    const username = values.get('sasl.username');
    const password = values.get('sasl.password');
    if (
      username === undefined ||
      password === undefined ||
      !saslMechanismNames.includes(mechanism)
    ) {
      throw clientError(
        ClientErrorCode.InvalidConfig,
        `${file}: security.protocol=SASL_SSL needs sasl.username and sasl.password, and ` +
          'sasl.mechanism PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512',
      );
    }
    config.sasl = { mechanism: mechanism as SpoolSaslOptions['mechanism'], username, password };
  }
  if (protocol === 'SSL' || protocol === 'SASL_SSL') {
    const location = (key: string): string | undefined => {
      const value = values.get(key);
      return value === undefined || value === '' ? undefined : value;
    };
    const caFile = location('ssl.ca.location');
    const certificateFile = location('ssl.certificate.location');
    const keyFile = location('ssl.key.location');
    try {
      const material = checkTlsMaterial({
        ...(caFile === undefined ? {} : { caFile }),
        ...(certificateFile === undefined ? {} : { certificateFile }),
        ...(keyFile === undefined ? {} : { keyFile }),
      });
      config.ssl =
        material.caPem === undefined && material.certificateChainPem === undefined
          ? true
          : {
              ...(material.caPem === undefined ? {} : { ca: material.caPem }),
              ...(material.certificateChainPem === undefined
                ? {}
                : { cert: material.certificateChainPem, key: material.keyPem as Buffer }),
            };
    } catch (error) {
      if (!(error instanceof TlsMaterialError)) throw error;
      throw clientError(ClientErrorCode.InvalidConfig, `${file}: ${error.message}`);
    }
  }
  return config;
}

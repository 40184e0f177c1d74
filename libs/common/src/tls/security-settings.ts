// The settings of transport security every service and the CLI share, named as Kafka's and
// librdkafka's properties are (security.protocol, ssl.certificate.location, ssl.key.location,
// ssl.ca.location, ssl.client.auth), so a client.properties file reads the same everywhere.
import { ConfigError, fileKey, type ConfigValues, type SettingsSchema } from '../config';
import type { Logger } from '../logger';
import { clientAuthentications, type ClientAuthentication } from './grpc-tls';
import { sslReloadIntervalMsDefault } from './tls-material';
import { TransportSecurity } from './transport-security';

export const securitySettings = {
  securityProtocol: {
    type: 'string',
    default: 'PLAINTEXT',
    choices: ['PLAINTEXT', 'SSL'],
    description:
      'PLAINTEXT, or SSL: TLS 1.2/1.3 on every listener and connection, with the ssl.* files.',
  },
  sslCertificateLocation: {
    type: 'string',
    default: '',
    description: 'PEM certificate chain this process presents (SSL).',
  },
  sslKeyLocation: {
    type: 'string',
    default: '',
    description: "PEM private key of ssl.certificate.location's certificate (SSL).",
  },
  sslCaLocation: {
    type: 'string',
    default: '',
    description:
      "PEM CA bundle peers' certificates are checked against (SSL); empty: the system's.",
  },
  sslClientAuth: {
    type: 'string',
    default: 'required',
    choices: clientAuthentications,
    description: 'required: listeners accept only clients with a certificate from ssl.ca.location.',
  },
  sslReloadIntervalMs: {
    type: 'integer',
    default: sslReloadIntervalMsDefault,
    min: 100,
    max: 3_600_000,
    description: 'How often the ssl.* files are checked for a rotated certificate.',
  },
} as const satisfies SettingsSchema;

export type SecuritySettings = typeof securitySettings;

/**
 * The process's TransportSecurity, or undefined for PLAINTEXT. SSL without the files a role
 * needs is a ConfigError naming the setting; a bad file is a TlsMaterialError naming the file.
 */
export function transportSecurityOf(
  config: ConfigValues<SecuritySettings>,
  options: { readonly role: 'server' | 'client'; readonly logger?: Logger },
): TransportSecurity | undefined {
  if (config.securityProtocol !== 'SSL') {
    for (const name of ['sslCertificateLocation', 'sslKeyLocation', 'sslCaLocation'] as const) {
      if (config[name] !== '') {
        throw new ConfigError(
          `${fileKey(name)} is set but security.protocol is ${config.securityProtocol}; ` +
            'set security.protocol=SSL to use it',
        );
      }
    }
    return undefined;
  }
  // A client presents a certificate when it has one (mTLS); a server always needs one.
  const needed =
    options.role === 'server' ? (['sslCertificateLocation', 'sslKeyLocation'] as const) : [];
  for (const name of needed) {
    if (config[name] === '') {
      throw new ConfigError(`security.protocol=SSL needs ${fileKey(name)} (a PEM file)`);
    }
  }
  if (
    options.role === 'server' &&
    config.sslCaLocation === '' &&
    config.sslClientAuth === 'required'
  ) {
    throw new ConfigError(
      'ssl.client.auth=required needs ssl.ca.location: the CA client certificates are checked against',
    );
  }
  return TransportSecurity.load(
    {
      ...(config.sslCertificateLocation === ''
        ? {}
        : { certificateFile: config.sslCertificateLocation }),
      ...(config.sslKeyLocation === '' ? {} : { keyFile: config.sslKeyLocation }),
      ...(config.sslCaLocation === '' ? {} : { caFile: config.sslCaLocation }),
    },
    {
      clientAuthentication: config.sslClientAuth as ClientAuthentication,
      reloadIntervalMs: config.sslReloadIntervalMs,
      ...(options.logger === undefined ? {} : { logger: options.logger }),
    },
  );
}

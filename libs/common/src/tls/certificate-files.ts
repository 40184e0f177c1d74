// The files of a development cluster's certificates, as `spool dev --secure` and the tests lay
// them out in one directory: a CA, one certificate per service role (valid for the hosts given,
// with the role's URI, service-identity.ts) and one client certificate.
//
//   ca.pem  ca-key.pem                      the cluster CA (the key stays to issue more)
//   <role>.pem  <role>-key.pem              controller, storage-node, coordinator, gateway
//   client.pem  client-key.pem              a client (CLI, SDK): no service role
//
// Keys are written with mode 0600. An existing CA is kept (so certificates issued before stay
// trusted) and every other certificate is issued again.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import {
  createCertificateAuthority,
  issueCertificate,
  type CertificateAuthority,
} from './certificate-authority';
import { serviceRoles, serviceRoleUri, type ServiceRole } from './service-identity';
import type { TlsFiles } from './tls-material';

export interface DevelopmentCertificates {
  readonly directory: string;
  readonly caFile: string;
  readonly services: Readonly<Record<ServiceRole, Required<TlsFiles>>>;
  readonly client: Required<TlsFiles>;
}

/** Where writeDevelopmentCertificates puts each file in `directory`. */
export function developmentCertificateFiles(directory: string): DevelopmentCertificates {
  const caFile = path.join(directory, 'ca.pem');
  const filesOf = (name: string): Required<TlsFiles> => ({
    certificateFile: path.join(directory, `${name}.pem`),
    keyFile: path.join(directory, `${name}-key.pem`),
    caFile,
  });
  return {
    directory,
    caFile,
    services: Object.fromEntries(serviceRoles.map((role) => [role, filesOf(role)])) as Record<
      ServiceRole,
      Required<TlsFiles>
    >,
    client: filesOf('client'),
  };
}

export function writeDevelopmentCertificates(
  directory: string,
  options: { readonly hosts: readonly string[]; readonly clientName?: string },
): DevelopmentCertificates {
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  const caFile = path.join(directory, 'ca.pem');
  const caKeyFile = path.join(directory, 'ca-key.pem');
  const authority: CertificateAuthority =
    existsSync(caFile) && existsSync(caKeyFile)
      ? {
          certificatePem: readFileSync(caFile, 'utf8'),
          privateKeyPem: readFileSync(caKeyFile, 'utf8'),
        }
      : createCertificateAuthority({ commonName: 'spool-dev-ca', organization: 'Spool' });
  writeFileSync(caFile, authority.certificatePem);
  writeFileSync(caKeyFile, authority.privateKeyPem, { mode: 0o600 });

  const write = (name: string, issued: { certificatePem: string; privateKeyPem: string }) => {
    const files = {
      certificateFile: path.join(directory, `${name}.pem`),
      keyFile: path.join(directory, `${name}-key.pem`),
      caFile,
    };
    writeFileSync(files.keyFile, issued.privateKeyPem, { mode: 0o600 });
    writeFileSync(files.certificateFile, issued.certificatePem);
    return files;
  };
  const services = Object.fromEntries(
    serviceRoles.map((role) => [
      role,
      write(
        role,
        issueCertificate(authority, {
          subject: { commonName: `spool-${role}`, organization: 'Spool' },
          hosts: options.hosts,
          uris: [serviceRoleUri(role)],
        }),
      ),
    ]),
  ) as Record<ServiceRole, Required<TlsFiles>>;
  const client = write(
    'client',
    issueCertificate(authority, { subject: { commonName: options.clientName ?? 'admin' } }),
  );
  return { directory, caFile, services, client };
}

// Which Spool service a peer is, from its certificate: services' certificates carry the URI
// `spool://service/<role>` in subjectAltName (as SPIFFE IDs do), issued by the cluster CA. A
// client certificate from the same CA carries no such URI, so a storage node can accept Append
// and replica fetches from the cluster's services only (Kafka's ClusterAction on the cluster
// resource, which only brokers hold), and answer anyone else CLUSTER_AUTHORIZATION_FAILED.
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { SpoolError } from '../errors';

export const serviceRoles = ['controller', 'storage-node', 'coordinator', 'gateway'] as const;
export type ServiceRole = (typeof serviceRoles)[number];

const serviceRoleUriPrefix = 'spool://service/';

export function serviceRoleUri(role: ServiceRole): string {
  return `${serviceRoleUriPrefix}${role}`;
}

/**
 * The role named in a verified peer certificate, or undefined for a certificate without one
 * (a client's) and for no certificate. The caller must know that the certificate was verified
 * against the cluster CA: the TLS listener requires and checks it (ssl.client.auth=required).
 */
export function serviceRoleOf(peer: PeerCertificate | undefined): ServiceRole | undefined {
  const alternativeNames = peer?.subjectaltname;
  if (alternativeNames === undefined) return undefined;
  for (const name of alternativeNames.split(', ')) {
    if (!name.startsWith(`URI:${serviceRoleUriPrefix}`)) continue;
    const role = name.slice(`URI:${serviceRoleUriPrefix}`.length);
    if ((serviceRoles as readonly string[]).includes(role)) return role as ServiceRole;
  }
  return undefined;
}

/** Throws CLUSTER_AUTHORIZATION_FAILED unless the peer presented a Spool service's certificate. */
export function ensurePeerIsService(
  peer: PeerCertificate | undefined,
  action: string,
): ServiceRole {
  const role = serviceRoleOf(peer);
  if (role !== undefined) return role;
  const who =
    peer === undefined || Object.keys(peer).length === 0
      ? 'a peer without a certificate'
      : `the certificate of ${describeSubject(peer)}`;
  throw new SpoolError(
    'CLUSTER_AUTHORIZATION_FAILED',
    `${action} is for Spool's services only, and ${who} names no service role ` +
      `(a subjectAltName URI ${serviceRoleUriPrefix}<role> from the cluster CA)`,
  );
}

function describeSubject(peer: PeerCertificate): string {
  const subject = peer.subject as Partial<Record<string, string | string[]>> | undefined;
  const commonName = subject?.CN;
  return commonName === undefined ? 'an unnamed subject' : `CN=${String(commonName)}`;
}

/**
 * Node's checkServerIdentity for a service's connections to other services, under a private
 * cluster CA: a certificate that names a service role is accepted whatever address was dialled,
 * any other must name the host (RFC 6125, as Kafka's ssl.endpoint.identification.algorithm=https).
 *
 * Why not the host alone: services find each other at the addresses they advertise, and on
 * Kubernetes a Deployment's pods advertise their pod IP, which no certificate issued before the
 * pod existed can name. Identity is then the URI, as SPIFFE and Istio verify it. Node runs this
 * only after the chain verified against ssl.ca.location, so the URI is the cluster CA's word;
 * with the system's CAs (no ssl.ca.location) hostnames are checked as usual and this is unused.
 */
export function checkServiceServerIdentity(
  host: string,
  certificate: PeerCertificate,
): Error | undefined {
  if (serviceRoleOf(certificate) !== undefined) return undefined;
  return checkServerIdentity(host, certificate);
}

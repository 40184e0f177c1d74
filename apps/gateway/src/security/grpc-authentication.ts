/**
 * Who calls this gateway over gRPC (grpc.authentication): the per-call credentials the SDK
 * sends with `sasl` (`authorization: Basic base64(user:password)`, RFC 7617), checked against
 * the user's stored SCRAM credential (client-authenticator.ts), make the call User:<user>.
 *
 * - none (the default, as Kafka's PLAINTEXT listener): every call is User:ANONYMOUS, and
 *   credentials sent anyway are not checked.
 * - required: a call is authenticated by, in order: its credentials (a wrong password is
 *   refused even when a certificate is presented); a Spool service's certificate (the
 *   gateway's own record-level SDK), User:spool-<role>; a client certificate verified against
 *   the cluster CA (ssl.client.auth=required), User:<its CN>, as Kafka's SSL principal with
 *   ssl.principal.mapping.rules=RULE:^CN=(.*?)$/$1/. Anything else is answered UNAUTHENTICATED
 *   (SASL_AUTHENTICATION_FAILED) before the handler runs.
 *
 * Credentials travel in the clear over a plaintext listener; the SDK sends them over TLS only.
 */
import { SaslAuthenticationError, hostOfPeer, serviceRoleOf, userPrincipal } from '@spool/common';
import type * as grpc from '@grpc/grpc-js';
import type { ClientAuthenticator } from './client-authenticator';

export const grpcAuthentications = ['none', 'required'] as const;
export type GrpcAuthentication = (typeof grpcAuthentications)[number];

/** Longest authorization header read: a user name and password of 255 bytes each, in base64. */
const authorizationBytesMax = 1_024;

/** The principal of a Spool service's own calls. */
export function servicePrincipal(role: string): string {
  return userPrincipal(`spool-${role}`);
}

export function grpcCallAuthenticator(
  authenticator: ClientAuthenticator,
  /** ssl.client.auth=required: every certificate presented was verified against the CA. */
  requiresVerifiedCertificates: boolean,
): (call: grpc.ServerUnaryCall<unknown, unknown>) => Promise<string> {
  return async (call) => {
    const header = call.metadata.get('authorization')[0];
    if (header === undefined) {
      const certificate = call.getAuthContext().sslPeerCertificate;
      const role = serviceRoleOf(certificate);
      if (role !== undefined) return servicePrincipal(role);
      const commonName = (certificate?.subject as Partial<Record<string, unknown>> | undefined)?.CN;
      if (typeof commonName === 'string' && commonName !== '' && requiresVerifiedCertificates) {
        return userPrincipal(commonName);
      }
      const error = new SaslAuthenticationError(
        "this gateway requires credentials (grpc.authentication=required): set the SDK's sasl " +
          'option, or sasl.username and sasl.password in client.properties',
      );
      authenticator.recordFailure('grpc', 'none', hostOfPeer(call.getPeer()), error);
      throw error;
    }
    try {
      const { user, password } = parseBasicAuthorization(header);
      const authenticated = await authenticator.authenticatePassword(user, password);
      authenticator.recordSuccess('grpc', 'basic');
      return userPrincipal(authenticated);
    } catch (error) {
      authenticator.recordFailure('grpc', 'basic', hostOfPeer(call.getPeer()), error);
      throw error;
    }
  };
}

function parseBasicAuthorization(header: string | Buffer): { user: string; password: string } {
  const text = typeof header === 'string' ? header : header.toString('utf8');
  if (text.length > authorizationBytesMax || !text.startsWith('Basic ')) {
    throw new SaslAuthenticationError('the authorization metadata is not "Basic <base64>"');
  }
  const decoded = Buffer.from(text.slice('Basic '.length), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0)
    throw new SaslAuthenticationError('the authorization metadata has no user:password');
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * Client certificates on a TLS Kafka listener (SSL, SASL_SSL), as Kafka's ssl.client.auth:
 *
 * 1. `none`: no certificate is asked for; an SSL connection is User:ANONYMOUS.
 * 2. `requested`: a certificate is asked for and may be left out (User:ANONYMOUS); one that is
 *    sent must verify against ssl.ca.location and be within its validity, or the connection is
 *    refused before any request is read (Java's TLS engine fails such a handshake too).
 * 3. `required`: a client without a certificate that verifies fails the TLS handshake.
 *
 * The principal of a verified certificate is what Kafka's default ssl.principal.mapping.rules
 * (DEFAULT) gives: `User:` and the subject's distinguished name as Java's
 * X500Principal.getName() writes it (RFC 2253): the most specific RDN first, RDNs joined by `,`
 * without spaces, a multi-valued RDN's parts by `+`, special characters escaped with `\`. A
 * certificate issued to CN=alice, OU=payments, O=Example is `User:CN=alice,OU=payments,O=Example`.
 * Attribute names are OpenSSL's short names, which are Java's for CN, OU, O, L, ST, C, DC, UID
 * and STREET; others (emailAddress) are written by name where Java writes the OID and the DER
 * value in hex. On SASL_SSL the SASL principal replaces it once SaslAuthenticate succeeds, as in
 * Kafka.
 */
import type { X509Certificate } from 'node:crypto';
import type * as tls from 'node:tls';

export const kafkaSslClientAuths = ['none', 'requested', 'required'] as const;
export type KafkaSslClientAuth = (typeof kafkaSslClientAuths)[number];

/** The node:tls server options of a mode (points 1 to 3; point 2's check is acceptanceOf). */
export function sslClientAuthServerOptions(
  mode: KafkaSslClientAuth,
): Pick<tls.TlsOptions, 'requestCert' | 'rejectUnauthorized'> {
  return { requestCert: mode !== 'none', rejectUnauthorized: mode === 'required' };
}

/** What a TLS connection is once its handshake is done: its principal, or why it is refused. */
export type SslAcceptance =
  | { readonly accepted: true; readonly principal: string | undefined }
  | { readonly accepted: false; readonly reason: string };

export function acceptanceOf(socket: tls.TLSSocket, mode: KafkaSslClientAuth): SslAcceptance {
  if (mode === 'none') return { accepted: true, principal: undefined };
  const certificate = socket.getPeerX509Certificate();
  if (certificate === undefined) {
    // Point 3 never gets here: the handshake itself refused the client.
    return { accepted: true, principal: undefined };
  }
  if (!socket.authorized) {
    return {
      accepted: false,
      reason: `the client certificate of ${subjectPrincipalOf(certificate)} does not verify: ${String(socket.authorizationError)}`,
    };
  }
  return { accepted: true, principal: subjectPrincipalOf(certificate) };
}

/**
 * `User:<RFC 2253 subject>`. Node writes the subject one RDN a line, the least specific first,
 * a multi-valued RDN's parts joined by ` + `, values already escaped as RFC 2253 asks (and
 * control characters as `\XX`, so no value holds a line break).
 */
export function subjectPrincipalOf(certificate: X509Certificate): string {
  const rdns = certificate.subject
    .split('\n')
    .filter((rdn) => rdn !== '')
    .map((rdn) => rdn.split(' + ').join('+'));
  return `User:${rdns.reverse().join(',')}`;
}

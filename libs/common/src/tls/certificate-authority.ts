// A small certificate authority for `spool dev --secure` and the tests: ECDSA P-256 keys and
// X.509 v3 certificates, a CA and the certificates it issues to services and clients.
//
// Why not the `openssl` binary: it is on CI's image (install-test-tools.sh) but not in the
// runtime image nor on every developer's machine, and `spool dev --secure` must work wherever
// `spool dev` does. node:crypto has everything but the envelope: it generates the keys, exports
// the SubjectPublicKeyInfo in DER and signs; der.ts encodes the TBSCertificate around them (about
// a hundred lines), and node:crypto's X509Certificate (and `openssl verify` in the spec) checks
// the result.
//
// What a certificate holds (RFC 5280):
// 1. A CA: basicConstraints CA:TRUE (critical), keyUsage keyCertSign and cRLSign (critical),
//    a subject key identifier.
// 2. An issued certificate: basicConstraints CA:FALSE, keyUsage digitalSignature (critical),
//    extKeyUsage serverAuth and clientAuth (one certificate serves a service's listener and its
//    outgoing connections), subjectAltName (DNS names, IP addresses, URIs such as the service
//    role, service-identity.ts), subject and authority key identifiers.
import { createHash, generateKeyPairSync, randomBytes, sign, X509Certificate } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { isIP } from 'node:net';
import {
  derBitString,
  derBoolean,
  derContext,
  derNamedBits,
  derObjectIdentifier,
  derOctetString,
  derSequence,
  derSet,
  derSmallInteger,
  derTime,
  derUnsignedInteger,
  derUtf8String,
} from './der';

const oid = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  organizationalUnit: '2.5.4.11',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extendedKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  subjectKeyIdentifier: '2.5.29.14',
  authorityKeyIdentifier: '2.5.29.35',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;

/** keyUsage bit numbers (RFC 5280 4.2.1.3). */
const keyUsageBit = { digitalSignature: 0, keyCertSign: 5, cRLSign: 6 } as const;

/** Clocks of the machines in a cluster disagree a little: a new certificate is valid from now. */
const clockSkewAllowanceMs = 60 * 60 * 1000;
const dayMs = 24 * 60 * 60 * 1000;
/** Ten years for a development CA: `spool dev --secure` keeps its data directory for long. */
export const certificateAuthorityValidityDaysDefault = 3650;
/** A year for an issued certificate; rotation replaces it before then. */
export const certificateValidityDaysDefault = 365;

export interface DistinguishedName {
  readonly commonName: string;
  readonly organization?: string;
  readonly organizationalUnit?: string;
}

export interface CertificateAuthority {
  readonly certificatePem: string;
  readonly privateKeyPem: string;
}

export interface IssuedCertificate {
  readonly certificatePem: string;
  readonly privateKeyPem: string;
}

export interface CertificateRequest {
  readonly subject: DistinguishedName;
  /** DNS names and IP addresses the holder is reached at (subjectAltName). */
  readonly hosts?: readonly string[];
  /** URIs in subjectAltName, such as a service role (service-identity.ts). */
  readonly uris?: readonly string[];
  /** Validity window; defaults to from an hour ago for certificateValidityDaysDefault days. */
  readonly notBefore?: Date;
  readonly notAfter?: Date;
}

export function createCertificateAuthority(
  subject: DistinguishedName,
  validityDays = certificateAuthorityValidityDaysDefault,
): CertificateAuthority {
  const { privateKey, publicKey } = generateEcKeyPair();
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const now = Date.now();
  const extensions = [
    extension(oid.basicConstraints, true, derSequence(derBoolean(true))),
    extension(oid.keyUsage, true, derNamedBits([keyUsageBit.keyCertSign, keyUsageBit.cRLSign])),
    extension(oid.subjectKeyIdentifier, false, derOctetString(keyIdentifier(spki))),
  ];
  const certificateDer = signCertificate({
    issuer: subject,
    subject,
    spki,
    notBefore: new Date(now - clockSkewAllowanceMs),
    notAfter: new Date(now + validityDays * dayMs),
    extensions,
    signingKey: privateKey,
  });
  return {
    certificatePem: toPem('CERTIFICATE', certificateDer),
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  };
}

/** A certificate signed by `authority`, with a new key of its own. */
export function issueCertificate(
  authority: CertificateAuthority,
  request: CertificateRequest,
): IssuedCertificate {
  const authorityCertificate = new X509Certificate(authority.certificatePem);
  const authoritySpki = authorityCertificate.publicKey.export({ type: 'spki', format: 'der' });
  const { privateKey, publicKey } = generateEcKeyPair();
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const now = Date.now();
  const notBefore = request.notBefore ?? new Date(now - clockSkewAllowanceMs);
  const notAfter = request.notAfter ?? new Date(now + certificateValidityDaysDefault * dayMs);
  if (notAfter.getTime() <= notBefore.getTime()) {
    throw new RangeError('a certificate must end after it begins (notAfter > notBefore)');
  }
  const extensions = [
    extension(oid.basicConstraints, false, derSequence()),
    extension(oid.keyUsage, true, derNamedBits([keyUsageBit.digitalSignature])),
    extension(
      oid.extendedKeyUsage,
      false,
      derSequence(derObjectIdentifier(oid.serverAuth), derObjectIdentifier(oid.clientAuth)),
    ),
    extension(oid.subjectKeyIdentifier, false, derOctetString(keyIdentifier(spki))),
    extension(
      oid.authorityKeyIdentifier,
      false,
      derSequence(derContext(0, keyIdentifier(authoritySpki), false)),
    ),
  ];
  const alternativeNames = subjectAlternativeNames(request.hosts ?? [], request.uris ?? []);
  if (alternativeNames !== undefined) {
    extensions.push(extension(oid.subjectAltName, false, alternativeNames));
  }
  const certificateDer = signCertificate({
    issuer: distinguishedNameOf(authorityCertificate),
    subject: request.subject,
    spki,
    notBefore,
    notAfter,
    extensions,
    signingKey: authority.privateKeyPem,
  });
  return {
    certificatePem: toPem('CERTIFICATE', certificateDer),
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  };
}

function generateEcKeyPair(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
}

function signCertificate(fields: {
  issuer: DistinguishedName;
  subject: DistinguishedName;
  spki: Buffer;
  notBefore: Date;
  notAfter: Date;
  extensions: readonly Buffer[];
  signingKey: KeyObject | string;
}): Buffer {
  const signatureAlgorithm = derSequence(derObjectIdentifier(oid.ecdsaWithSha256));
  // A positive 127-bit serial: unique without bookkeeping (RFC 5280 allows up to 20 bytes).
  const serial = randomBytes(16);
  serial[0] = (serial[0] as number) & 0x7f;
  const tbsCertificate = derSequence(
    derContext(0, derSmallInteger(2), true), // version v3
    derUnsignedInteger(serial),
    signatureAlgorithm,
    encodeName(fields.issuer),
    derSequence(derTime(fields.notBefore), derTime(fields.notAfter)),
    encodeName(fields.subject),
    fields.spki,
    derContext(3, derSequence(...fields.extensions), true),
  );
  // ECDSA's signature is DER's ECDSA-Sig-Value already (node's default dsaEncoding).
  const signature = sign('sha256', tbsCertificate, fields.signingKey);
  return derSequence(tbsCertificate, signatureAlgorithm, derBitString(signature));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical
    ? derSequence(derObjectIdentifier(id), derBoolean(true), derOctetString(value))
    : derSequence(derObjectIdentifier(id), derOctetString(value));
}

function encodeName(name: DistinguishedName): Buffer {
  const attributes: Array<[string, string]> = [];
  if (name.organization !== undefined) attributes.push([oid.organization, name.organization]);
  if (name.organizationalUnit !== undefined) {
    attributes.push([oid.organizationalUnit, name.organizationalUnit]);
  }
  attributes.push([oid.commonName, name.commonName]);
  return derSequence(
    ...attributes.map(([id, value]) =>
      derSet(derSequence(derObjectIdentifier(id), derUtf8String(value))),
    ),
  );
}

/** The issuer's name as it was encoded in its own certificate (O, OU, CN in that order). */
function distinguishedNameOf(certificate: X509Certificate): DistinguishedName {
  const fields = new Map<string, string>();
  for (const line of certificate.subject.split('\n')) {
    const separator = line.indexOf('=');
    if (separator > 0) fields.set(line.slice(0, separator), line.slice(separator + 1));
  }
  const commonName = fields.get('CN');
  if (commonName === undefined) throw new RangeError('the CA certificate has no common name');
  return {
    commonName,
    ...(fields.has('O') ? { organization: fields.get('O') as string } : {}),
    ...(fields.has('OU') ? { organizationalUnit: fields.get('OU') as string } : {}),
  };
}

/** GeneralNames: dNSName [2], uniformResourceIdentifier [6], iPAddress [7], all implicit. */
function subjectAlternativeNames(
  hosts: readonly string[],
  uris: readonly string[],
): Buffer | undefined {
  const names: Buffer[] = [];
  for (const host of hosts) {
    const version = isIP(host);
    if (version === 0) names.push(derContext(2, Buffer.from(host, 'ascii'), false));
    else names.push(derContext(7, ipAddressBytes(host, version), false));
  }
  for (const uri of uris) names.push(derContext(6, Buffer.from(uri, 'ascii'), false));
  return names.length === 0 ? undefined : derSequence(...names);
}

function ipAddressBytes(address: string, version: number): Buffer {
  if (version === 4) return Buffer.from(address.split('.').map((part) => Number(part)));
  // IPv6: expand '::' and write eight 16-bit groups.
  const [head = '', tail = ''] = address.split('::') as [string, string?];
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = address.includes('::') && tail !== '' ? tail.split(':') : [];
  const missing = 8 - headGroups.length - tailGroups.length;
  const groups = [...headGroups, ...Array<string>(missing).fill('0'), ...tailGroups];
  const bytes = Buffer.alloc(16);
  groups.forEach((group, index) => bytes.writeUInt16BE(parseInt(group, 16), index * 2));
  return bytes;
}

/** RFC 5280's method 1 in spirit: a SHA-1 of the public key info, unique per key. */
function keyIdentifier(spki: Buffer): Buffer {
  return createHash('sha1').update(spki).digest();
}

function toPem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

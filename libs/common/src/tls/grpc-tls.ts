// gRPC credentials over a TlsMaterial that follow its reloads.
//
// Server: grpc-js's ServerCredentials keeps a list of watchers, one per bound HTTP/2 server, and
// hands each new secure context options to `setSecureContext` (grpc-js 1.14's server.js); its
// own createSsl never changes them. ReloadingServerCredentials starts from the material in use
// (so the server binds with it, synchronously) and passes every accepted reload on: new
// handshakes use the new certificate, open connections keep theirs.
// Client: grpc-js's certificate-provider channel credentials build a secure context from the
// latest CA and identity for every new connection; TlsMaterial is the provider.
import * as grpc from '@grpc/grpc-js';
import type { SecureContextOptions } from 'node:tls';
import { checkServiceServerIdentity } from './service-identity';
import type { TlsMaterial, TlsMaterialSnapshot } from './tls-material';

/** Kafka's ssl.client.auth: required (mTLS) or none (server-only TLS). */
export type ClientAuthentication = 'required' | 'none';
export const clientAuthentications: readonly ClientAuthentication[] = ['required', 'none'];

const tlsVersionMin = 'TLSv1.2';

class ReloadingServerCredentials extends grpc.ServerCredentials {
  constructor(material: TlsMaterial, clientAuthentication: ClientAuthentication) {
    super(
      {
        requestCert: clientAuthentication === 'required',
        rejectUnauthorized: clientAuthentication === 'required',
        minVersion: tlsVersionMin,
      },
      secureContextOptionsOf(material.current),
    );
    material.onChange((snapshot) =>
      this.updateSecureContextOptions(secureContextOptionsOf(snapshot)),
    );
  }

  _equals(other: grpc.ServerCredentials): boolean {
    return other === this;
  }
}

export function serverCredentialsOf(
  material: TlsMaterial,
  clientAuthentication: ClientAuthentication,
): grpc.ServerCredentials {
  if (material.current.certificate === undefined) {
    throw new RangeError('a TLS server needs a certificate and a key (ssl.certificate.location)');
  }
  return new ReloadingServerCredentials(material, clientAuthentication);
}

export function secureContextOptionsOf(snapshot: TlsMaterialSnapshot): SecureContextOptions {
  return {
    ...(snapshot.certificateChainPem === undefined
      ? {}
      : { cert: snapshot.certificateChainPem, key: snapshot.keyPem }),
    ...(snapshot.caPem === undefined ? {} : { ca: snapshot.caPem }),
    minVersion: tlsVersionMin,
  };
}

/**
 * Credentials for channels that present this material's certificate (when it has one) and trust
 * its CA bundle (or the system's when it has none), re-read for each new connection.
 * `serviceIdentity`: a service's channels to other services, which accept a certificate naming
 * a service role for any address (checkServiceServerIdentity); a client's check the host.
 */
export function channelCredentialsOf(
  material: TlsMaterial,
  options: { readonly serviceIdentity?: boolean } = {},
): grpc.ChannelCredentials {
  const snapshot = material.current;
  if (snapshot.caPem === undefined) {
    // Public CAs: the system's roots; the identity cannot follow reloads on this path.
    return grpc.credentials.createSsl(
      null,
      snapshot.keyPem ?? null,
      snapshot.certificateChainPem ?? null,
    );
  }
  const provider = new TlsMaterialCertificateProvider(material);
  return grpc.experimental.createCertificateProviderChannelCredentials(
    provider,
    snapshot.certificate === undefined ? null : provider,
    options.serviceIdentity === true ? { checkServerIdentity: checkServiceServerIdentity } : {},
  );
}

/** grpc-js's CertificateProvider over a TlsMaterial: the latest accepted files, always. */
class TlsMaterialCertificateProvider implements grpc.experimental.CertificateProvider {
  private readonly caListeners = new Map<
    grpc.experimental.CaCertificateUpdateListener,
    () => void
  >();
  private readonly identityListeners = new Map<
    grpc.experimental.IdentityCertificateUpdateListener,
    () => void
  >();

  constructor(private readonly material: TlsMaterial) {}

  addCaCertificateListener(listener: grpc.experimental.CaCertificateUpdateListener): void {
    const tell = (snapshot: TlsMaterialSnapshot): void =>
      listener(snapshot.caPem === undefined ? null : { caCertificate: snapshot.caPem });
    this.caListeners.set(listener, this.material.onChange(tell));
    tell(this.material.current);
  }

  removeCaCertificateListener(listener: grpc.experimental.CaCertificateUpdateListener): void {
    this.caListeners.get(listener)?.();
    this.caListeners.delete(listener);
  }

  addIdentityCertificateListener(
    listener: grpc.experimental.IdentityCertificateUpdateListener,
  ): void {
    const tell = (snapshot: TlsMaterialSnapshot): void =>
      listener(
        snapshot.certificateChainPem === undefined || snapshot.keyPem === undefined
          ? null
          : { certificate: snapshot.certificateChainPem, privateKey: snapshot.keyPem },
      );
    this.identityListeners.set(listener, this.material.onChange(tell));
    tell(this.material.current);
  }

  removeIdentityCertificateListener(
    listener: grpc.experimental.IdentityCertificateUpdateListener,
  ): void {
    this.identityListeners.get(listener)?.();
    this.identityListeners.delete(listener);
  }
}

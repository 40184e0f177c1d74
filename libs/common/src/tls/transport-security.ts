// One process's transport security: its TLS material and what its listeners and outgoing
// connections make of it. A service builds it once from its settings (securityProtocol=SSL
// and the ssl.* locations); PLAINTEXT gives none, and every listener and channel stays plain.
import type * as grpc from '@grpc/grpc-js';
import type * as tls from 'node:tls';
import type { Logger } from '../logger';
import {
  channelCredentialsOf,
  secureContextOptionsOf,
  serverCredentialsOf,
  type ClientAuthentication,
} from './grpc-tls';
import { checkServiceServerIdentity } from './service-identity';
import { TlsMaterial, type TlsFiles } from './tls-material';

export class TransportSecurity {
  private serverCredentialsMemo: grpc.ServerCredentials | undefined;
  private channelCredentialsMemo: grpc.ChannelCredentials | undefined;

  constructor(
    readonly material: TlsMaterial,
    readonly clientAuthentication: ClientAuthentication,
  ) {}

  /** Reads the files (TlsMaterialError naming a bad one) and watches them for rotation. */
  static load(
    files: TlsFiles,
    options: {
      readonly clientAuthentication: ClientAuthentication;
      readonly reloadIntervalMs?: number;
      readonly logger?: Logger;
    },
  ): TransportSecurity {
    const material = TlsMaterial.load(files, {
      ...(options.logger === undefined ? {} : { logger: options.logger }),
      ...(options.reloadIntervalMs === undefined
        ? {}
        : { reloadIntervalMs: options.reloadIntervalMs }),
    });
    return new TransportSecurity(material, options.clientAuthentication);
  }

  /** One object for the process: grpc-js shares connections only between equal credentials. */
  serverCredentials(): grpc.ServerCredentials {
    this.serverCredentialsMemo ??= serverCredentialsOf(this.material, this.clientAuthentication);
    return this.serverCredentialsMemo;
  }

  /** Channels to other services: see checkServiceServerIdentity for what they accept. */
  channelCredentials(): grpc.ChannelCredentials {
    this.channelCredentialsMemo ??= channelCredentialsOf(this.material, { serviceIdentity: true });
    return this.channelCredentialsMemo;
  }

  /** Options of a node:tls server (the data port), with the material in use now. */
  tlsServerOptions(): tls.TlsOptions {
    // tls.Server builds its context from these options (it ignores a `secureContext`).
    return {
      ...secureContextOptionsOf(this.material.current),
      requestCert: this.clientAuthentication === 'required',
      rejectUnauthorized: this.clientAuthentication === 'required',
      minVersion: 'TLSv1.2',
    };
  }

  /** Keeps a node:tls server on the latest material; returns the function that stops it. */
  followReloads(server: tls.Server): () => void {
    return this.material.onChange((snapshot) =>
      server.setSecureContext(secureContextOptionsOf(snapshot)),
    );
  }

  /**
   * Options of a node:tls client connection to another service (the data port), with the
   * material in use now. Under a private CA the server's certificate must name a service role
   * or the host connected to (checkServiceServerIdentity); under the system's CAs, the host.
   */
  tlsConnectOptions(): tls.ConnectionOptions {
    const current = this.material.current;
    return {
      secureContext: current.secureContext,
      minVersion: 'TLSv1.2',
      ...(current.caPem === undefined ? {} : { checkServerIdentity: checkServiceServerIdentity }),
    };
  }

  close(): void {
    this.material.close();
  }
}

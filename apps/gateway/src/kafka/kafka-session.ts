/**
 * Who is at the other end of one Kafka connection: the client's host and, once authenticated,
 * its principal (`User:<name>`). A listener without SASL (PLAINTEXT, SSL) starts every session
 * authenticated as User:ANONYMOUS, as Kafka does; a SASL listener starts it unauthenticated and
 * only SaslHandshake and SaslAuthenticate move it on.
 *
 * States:
 * 1. Authenticating: the connection may send only ApiVersions, SaslHandshake and
 *    SaslAuthenticate, one request at a time (Kafka's SaslServerAuthenticator reads one frame
 *    at a time too); anything else closes it.
 * 2. Authenticated: every API; the principal no longer changes (no re-authentication:
 *    SaslAuthenticate advertises sessionLifetimeMs 0).
 * 3. Failed (from 1): a wrong password, an unknown user, a SASL message out of order; the
 *    connection writes the failure's answer and ends, reading nothing more.
 */
import { anonymousPrincipal, assert, hostOfPeer } from '@spool/common';

export const KafkaSessionState = {
  Authenticating: 'authenticating',
  Authenticated: 'authenticated',
  /** Authentication failed: the connection ends after the failure's answer. */
  Failed: 'failed',
} as const;

export type KafkaSessionState = (typeof KafkaSessionState)[keyof typeof KafkaSessionState];

export interface KafkaSessionOptions {
  readonly authenticationRequired: boolean;
  /** The verified client certificate's principal (kafka-ssl-client-auth.ts); SASL replaces it. */
  readonly certificatePrincipal?: string | undefined;
}

export class KafkaSession {
  private stateValue: KafkaSessionState;
  private principalValue: string;
  /** Per-connection scratch of the SASL exchange (the mechanism chosen, SCRAM's nonces). */
  saslExchange: unknown;

  constructor(
    /** The client's IP address, without its port (what Kafka's ACLs call the host). */
    readonly clientHost: string,
    options: KafkaSessionOptions,
  ) {
    this.stateValue = options.authenticationRequired
      ? KafkaSessionState.Authenticating
      : KafkaSessionState.Authenticated;
    this.principalValue = options.certificatePrincipal ?? anonymousPrincipal;
  }

  static forPeer(remoteAddress: string | undefined, options: KafkaSessionOptions): KafkaSession {
    return new KafkaSession(hostOfPeer(remoteAddress ?? 'unknown'), options);
  }

  get state(): KafkaSessionState {
    return this.stateValue;
  }

  get failed(): boolean {
    return this.stateValue === KafkaSessionState.Failed;
  }

  /** Point 3. */
  fail(): void {
    if (this.stateValue === KafkaSessionState.Authenticating) {
      this.stateValue = KafkaSessionState.Failed;
      this.saslExchange = undefined;
    }
  }

  get authenticated(): boolean {
    return this.stateValue === KafkaSessionState.Authenticated;
  }

  /** User:ANONYMOUS (or the client certificate's principal) until SASL authenticates someone. */
  get principal(): string {
    return this.principalValue;
  }

  /** SaslAuthenticate succeeded: the connection is this principal from now on. */
  authenticate(principal: string): void {
    assert(
      this.stateValue === KafkaSessionState.Authenticating,
      `a ${this.stateValue} Kafka session cannot authenticate again`,
    );
    this.principalValue = principal;
    this.stateValue = KafkaSessionState.Authenticated;
    this.saslExchange = undefined;
  }
}

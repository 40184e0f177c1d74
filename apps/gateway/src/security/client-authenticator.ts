/**
 * How this gateway authenticates clients: against the users' SCRAM credentials the controller
 * streams to it (ClusterMetadataCache.users, kept current by the metadata stream, so a user
 * created or deleted anywhere is known here within one metadata delta). The Kafka listener's
 * SASL mechanisms and the gRPC listener's per-call credentials (grpc-credentials.ts) both come
 * here, so both count and log failures the same way:
 *
 * - spool_authentication_failures_total{listener, mechanism}, and successes beside it;
 * - a log line per failure, at most failureLogLinesMax per failureLogIntervalMs; the lines
 *   left out are counted in the next line written, so a password-guessing client cannot flood
 *   the log.
 *
 * Unknown users and wrong passwords are indistinguishable to the client: the same message,
 * the same PBKDF2 work (against a stand-in credential derived from a per-process secret).
 */
import {
  authenticatePlain,
  isScramMechanism,
  passwordMatches,
  SaslAuthenticationError,
  ScramServerExchange,
  invalidCredentialsMessage,
  type Logger,
  type ScramCredential,
  type ScramMechanism,
} from '@spool/common';
import type { UserScramCredentials } from '@spool/protocol';
import { createHash, randomBytes } from 'node:crypto';
import { Counter, type Registry } from 'prom-client';

export const saslMechanisms = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;
export type SaslMechanism = (typeof saslMechanisms)[number];

/** At most this many failure lines per interval; the rest are counted. */
const failureLogLinesMax = 10;
const failureLogIntervalMs = 10_000;
/** Password checks remembered for gRPC calls (each costs a PBKDF2 otherwise). */
const verifiedPasswordsMax = 1_024;
const verifiedPasswordTtlMs = 60_000;

export type AuthenticationListener = 'kafka' | 'grpc';

export class ClientAuthenticator {
  private readonly standInSecret = randomBytes(32);
  private readonly failures: Counter<'listener' | 'mechanism'>;
  private readonly successes: Counter<'listener' | 'mechanism'>;
  private logWindowStartMs = 0;
  private logLinesInWindow = 0;
  private suppressedLines = 0;
  /** sha256(user, password, credential) → when verified; bounded, oldest first out. */
  private readonly verifiedPasswords = new Map<string, number>();
  private standInValue: ScramCredential | undefined;

  constructor(
    private readonly users: ReadonlyMap<string, UserScramCredentials>,
    private readonly logger: Logger,
    registry: Registry,
  ) {
    this.failures = new Counter({
      name: 'spool_authentication_failures_total',
      help:
        "Client authentications refused (Kafka's failed-authentication-total): a wrong " +
        'password, an unknown user, a malformed SASL message; by listener and mechanism.',
      labelNames: ['listener', 'mechanism'],
      registers: [registry],
    });
    this.successes = new Counter({
      name: 'spool_authentication_successes_total',
      help: "Client authentications that succeeded (Kafka's successful-authentication-total).",
      labelNames: ['listener', 'mechanism'],
      registers: [registry],
    });
  }

  /** The user's stored credential for a SCRAM mechanism. */
  readonly lookup = (user: string, mechanism: ScramMechanism): ScramCredential | undefined => {
    const stored = this.users
      .get(user)
      ?.credentials.find((credential) => credential.mechanism === mechanism);
    if (stored === undefined || !isScramMechanism(stored.mechanism)) return undefined;
    return {
      mechanism: stored.mechanism,
      iterations: stored.iterations,
      salt: Buffer.from(stored.salt),
      storedKey: Buffer.from(stored.storedKey),
      serverKey: Buffer.from(stored.serverKey),
    };
  };

  newScramExchange(mechanism: ScramMechanism): ScramServerExchange {
    return new ScramServerExchange(mechanism, this.lookup, this.standInSecret);
  }

  /** SASL/PLAIN: the user, or SaslAuthenticationError. */
  authenticatePlain(message: Buffer): Promise<string> {
    return authenticatePlain(message, this.lookup, this.standIn());
  }

  /**
   * A user name and password (gRPC per-call credentials): the user, or SaslAuthenticationError.
   * A pair verified in the last minute against the same stored credential is not hashed again.
   */
  async authenticatePassword(user: string, password: string): Promise<string> {
    const credential = this.lookup(user, 'SCRAM-SHA-512') ?? this.lookup(user, 'SCRAM-SHA-256');
    const cacheKey =
      credential === undefined
        ? undefined
        : createHash('sha256')
            .update(this.standInSecret)
            .update(user)
            .update('\u0000')
            .update(password)
            .update(credential.storedKey)
            .digest('base64');
    const now = Date.now();
    const verifiedAtMs = cacheKey === undefined ? undefined : this.verifiedPasswords.get(cacheKey);
    if (verifiedAtMs !== undefined && now - verifiedAtMs < verifiedPasswordTtlMs) return user;
    const matches = await passwordMatches(credential ?? this.standIn(), password);
    if (!matches || credential === undefined || cacheKey === undefined) {
      throw new SaslAuthenticationError(
        invalidCredentialsMessage(credential?.mechanism ?? 'SCRAM-SHA-512'),
      );
    }
    this.verifiedPasswords.delete(cacheKey);
    this.verifiedPasswords.set(cacheKey, now);
    if (this.verifiedPasswords.size > verifiedPasswordsMax) {
      this.verifiedPasswords.delete(this.verifiedPasswords.keys().next().value!);
    }
    return user;
  }

  recordSuccess(listener: AuthenticationListener, mechanism: string): void {
    this.successes.inc({ listener, mechanism });
  }

  /** Counts the failure and logs it within the bound of the header. */
  recordFailure(
    listener: AuthenticationListener,
    mechanism: string,
    clientHost: string,
    error: unknown,
  ): void {
    this.failures.inc({ listener, mechanism });
    const now = Date.now();
    if (now - this.logWindowStartMs >= failureLogIntervalMs) {
      this.logWindowStartMs = now;
      this.logLinesInWindow = 0;
    }
    if (this.logLinesInWindow >= failureLogLinesMax) {
      this.suppressedLines++;
      return;
    }
    this.logLinesInWindow++;
    const suppressed = this.suppressedLines;
    this.suppressedLines = 0;
    this.logger.warn(
      {
        listener,
        mechanism,
        clientHost,
        reason: (error as Error).message,
        ...(suppressed > 0 ? { failuresNotLogged: suppressed } : {}),
      },
      'client authentication failed',
    );
  }

  /** What an unknown user's password is checked against, so the work is the same. */
  private standIn(): ScramCredential {
    this.standInValue ??= {
      mechanism: 'SCRAM-SHA-512',
      iterations: 4096,
      salt: createHash('sha256').update(this.standInSecret).update('salt').digest(),
      storedKey: createHash('sha512').update(this.standInSecret).update('stored').digest(),
      serverKey: createHash('sha512').update(this.standInSecret).update('server').digest(),
    };
    return this.standInValue;
  }
}

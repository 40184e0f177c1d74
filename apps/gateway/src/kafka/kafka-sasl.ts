/**
 * SaslHandshake (17) and SaslAuthenticate (36): Kafka's SASL authentication (KIP-43, KIP-152)
 * on a SASL_PLAINTEXT or SASL_SSL listener, with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 checked
 * against the users the controller streams (client-authenticator.ts).
 *
 * 1. SaslHandshake names the mechanism; one the listener does not enable is answered
 *    UNSUPPORTED_SASL_MECHANISM with the enabled ones. Versions 0 and 1 are advertised (librdkafka
 *    requires version 0 in the range to use SASL at all), but the tokens must then come in
 *    SaslAuthenticate, as every client that sees SaslAuthenticate advertised sends them; a
 *    client sending unframed tokens after a version 0 handshake (Kafka before 1.0) is refused
 *    as a malformed request.
 * 2. SaslAuthenticate carries the mechanism's messages: one for PLAIN, two for SCRAM (the
 *    client-first and client-final messages). The last success authenticates the session as
 *    User:<name>; sessionLifetimeMs is 0 (no re-authentication, KIP-368 off).
 * 3. A failure answers SASL_AUTHENTICATION_FAILED with a message that does not tell an unknown
 *    user from a wrong password, marks the session failed, and the connection ends after the
 *    answer (Kafka closes it too). A handshake or authenticate out of order (after success,
 *    without a handshake) is ILLEGAL_SASL_STATE, and ends the connection the same way.
 * 4. Until the session is authenticated the dispatcher serves nothing but ApiVersions and these
 *    two (kafka-api-dispatcher.ts), one request at a time (kafka-connection.ts).
 */
import {
  isCodedError,
  isScramMechanism,
  userPrincipal,
  type ScramServerExchange,
} from '@spool/common';
import {
  type SaslAuthenticateRequest,
  type SaslAuthenticateResponse,
  type SaslHandshakeRequest,
  type SaslHandshakeResponse,
  readSaslAuthenticateRequest,
  readSaslHandshakeRequest,
  writeSaslAuthenticateResponse,
  writeSaslHandshakeResponse,
} from '@spool/kafka-protocol';
import type { ClientAuthenticator, SaslMechanism } from '../security/client-authenticator';
import type { KafkaApi } from './kafka-api-dispatcher';
import type { KafkaSession } from './kafka-session';

export const saslHandshakeApiKey = 17;
export const saslAuthenticateApiKey = 36;

const unsupportedSaslMechanism = 33;
const illegalSaslState = 34;
const saslAuthenticationFailed = 58;

/** What one session's exchange holds between its messages (session.saslExchange). */
interface SaslExchange {
  readonly mechanism: SaslMechanism;
  readonly scram: ScramServerExchange | undefined;
  /** SCRAM: whether the client-first message was answered. */
  firstAnswered: boolean;
}

export interface SaslSettings {
  readonly authenticator: ClientAuthenticator;
  readonly enabledMechanisms: readonly SaslMechanism[];
}

export function saslApis(
  settings: SaslSettings,
): [
  KafkaApi<SaslHandshakeRequest, SaslHandshakeResponse>,
  KafkaApi<SaslAuthenticateRequest, SaslAuthenticateResponse>,
] {
  const { authenticator, enabledMechanisms } = settings;
  const handshake: KafkaApi<SaslHandshakeRequest, SaslHandshakeResponse> = {
    apiKey: saslHandshakeApiKey,
    minVersion: 0,
    maxVersion: 1,
    read: readSaslHandshakeRequest,
    write: writeSaslHandshakeResponse,
    serve: async (request, _version, { session, clientHost }) => {
      const mechanisms = [...enabledMechanisms];
      if (session.authenticated || session.saslExchange !== undefined) {
        session.fail();
        return { errorCode: illegalSaslState, mechanisms };
      }
      const mechanism = enabledMechanisms.find((enabled) => enabled === request.mechanism);
      if (mechanism === undefined) {
        authenticator.recordFailure(
          'kafka',
          'unsupported',
          clientHost,
          new Error(`unsupported SASL mechanism ${JSON.stringify(request.mechanism.slice(0, 64))}`),
        );
        session.fail();
        return { errorCode: unsupportedSaslMechanism, mechanisms };
      }
      const exchange: SaslExchange = {
        mechanism,
        scram: isScramMechanism(mechanism) ? authenticator.newScramExchange(mechanism) : undefined,
        firstAnswered: false,
      };
      session.saslExchange = exchange;
      return { errorCode: 0, mechanisms };
    },
  };
  const authenticate: KafkaApi<SaslAuthenticateRequest, SaslAuthenticateResponse> = {
    apiKey: saslAuthenticateApiKey,
    minVersion: 0,
    maxVersion: 2,
    read: readSaslAuthenticateRequest,
    write: writeSaslAuthenticateResponse,
    serve: async (request, _version, { session, clientHost }) => {
      const exchange = session.saslExchange as SaslExchange | undefined;
      if (session.authenticated || exchange === undefined) {
        session.fail();
        return answer(
          illegalSaslState,
          session.authenticated
            ? 'SaslAuthenticate after authentication: re-authentication is not supported'
            : 'SaslAuthenticate before SaslHandshake',
        );
      }
      try {
        const { user, authBytes } = await step(exchange, request.authBytes, authenticator);
        if (user !== undefined) {
          session.authenticate(userPrincipal(user));
          authenticator.recordSuccess('kafka', exchange.mechanism);
        }
        return { ...answer(0, null), authBytes };
      } catch (error) {
        if (!isCodedError(error) || error.code !== 'SASL_AUTHENTICATION_FAILED') throw error;
        authenticator.recordFailure('kafka', exchange.mechanism, clientHost, error);
        session.fail();
        return answer(saslAuthenticationFailed, error.message);
      }
    },
  };
  return [handshake, authenticate];
}

/** Point 2: one message of the exchange; `user` once it is complete. */
async function step(
  exchange: SaslExchange,
  message: Buffer,
  authenticator: ClientAuthenticator,
): Promise<{ user: string | undefined; authBytes: Buffer }> {
  if (exchange.scram === undefined) {
    return { user: await authenticator.authenticatePlain(message), authBytes: Buffer.alloc(0) };
  }
  if (!exchange.firstAnswered) {
    exchange.firstAnswered = true;
    return { user: undefined, authBytes: exchange.scram.receiveClientFirst(message) };
  }
  const { serverFinal, user } = exchange.scram.receiveClientFinal(message);
  return { user, authBytes: serverFinal };
}

function answer(errorCode: number, errorMessage: string | null): SaslAuthenticateResponse {
  return { errorCode, errorMessage, authBytes: Buffer.alloc(0), sessionLifetimeMs: 0n };
}

/** The APIs a session may call before it is authenticated (point 4). */
export function allowedBeforeAuthentication(apiKey: number): boolean {
  return apiKey === 18 || apiKey === saslHandshakeApiKey || apiKey === saslAuthenticateApiKey;
}

export type { KafkaSession };

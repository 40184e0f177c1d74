// SASL/PLAIN (RFC 4616) checked against the stored SCRAM credentials: the message is
// `[authzid] NUL authcid NUL passwd` in UTF-8; the password is salted and hashed with the
// user's stored salt and iterations and compared with StoredKey, so PLAIN needs no other copy of
// the password. PLAIN sends the password itself: use it over TLS only (SASL_SSL).
import { SaslAuthenticationError } from './sasl-authentication-error';
import {
  invalidCredentialsMessage,
  passwordMatches,
  scramMechanisms,
  type ScramCredential,
  type ScramCredentialLookup,
} from './scram';

/** Longest PLAIN message accepted: three fields of at most 255 bytes each and two NULs. */
export const plainMessageBytesMax = 3 * 255 + 2;

export interface PlainMessage {
  readonly authorizationId: string;
  readonly user: string;
  readonly password: string;
}

export function parsePlainMessage(message: Buffer): PlainMessage {
  if (message.length > plainMessageBytesMax) {
    throw new SaslAuthenticationError(
      `the SASL/PLAIN message has ${message.length} bytes, over ${plainMessageBytesMax}`,
    );
  }
  const text = message.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(message)) {
    throw new SaslAuthenticationError('the SASL/PLAIN message is not valid UTF-8');
  }
  const fields = text.split('\u0000');
  if (fields.length !== 3) {
    throw new SaslAuthenticationError(
      'Invalid SASL/PLAIN response: expected 3 tokens separated by NUL, got ' + fields.length,
    );
  }
  const [authorizationId, user, password] = fields as [string, string, string];
  if (user === '')
    throw new SaslAuthenticationError('Authentication failed: username not specified');
  if (password === '') {
    throw new SaslAuthenticationError('Authentication failed: password not specified');
  }
  if (authorizationId !== '' && authorizationId !== user) {
    throw new SaslAuthenticationError(
      'Authentication failed: Client requested an authorization id that is different from username',
    );
  }
  return { authorizationId, user, password };
}

/**
 * The authenticated user of a PLAIN message, or SaslAuthenticationError. A user without a
 * credential costs the same PBKDF2 as one with a wrong password, against a stand-in.
 */
export async function authenticatePlain(
  message: Buffer,
  lookup: ScramCredentialLookup,
  standIn: ScramCredential,
): Promise<string> {
  const { user, password } = parsePlainMessage(message);
  // The strongest credential the user has; either one proves the password.
  const credential = [...scramMechanisms]
    .reverse()
    .map((mechanism) => lookup(user, mechanism))
    .find((found) => found !== undefined);
  const matches = await passwordMatches(credential ?? standIn, password);
  if (!matches || credential === undefined) {
    throw new SaslAuthenticationError(invalidCredentialsMessage('PLAIN'));
  }
  return user;
}

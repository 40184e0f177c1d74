// SCRAM (RFC 5802, RFC 7677) as Kafka uses it for SASL/SCRAM-SHA-256 and SCRAM-SHA-512: the
// credentials a server keeps, how they are derived from a password, and the server's side of
// one authentication exchange. The server never keeps the password: only the salt, the
// iteration count, StoredKey = H(HMAC(SaltedPassword, "Client Key")) and
// ServerKey = HMAC(SaltedPassword, "Server Key"), with SaltedPassword = PBKDF2(password, salt,
// iterations). A client proves it knows the password without sending it; the server proves it
// holds the credential (the server signature).
//
// The exchange, one ScramServerExchange per connection:
// 1. client-first-message `n,[a=authzid],n=<user>,r=<client nonce>[,extensions]`: the server
//    answers `r=<client nonce><server nonce>,s=<salt>,i=<iterations>`. A user without a
//    credential for the mechanism gets the same answer with a salt derived from the name, so
//    this step does not tell whether the user exists; the proof then fails as a wrong password
//    does.
// 2. client-final-message `c=<gs2 header>,r=<nonce>,p=<proof>`: the server checks the channel
//    binding, the nonce and the proof, and answers `v=<server signature>`.
// Every malformed message, every unsupported feature (channel binding, a token extension) and
// every wrong proof is a SaslAuthenticationError, SASL_AUTHENTICATION_FAILED; nothing else is thrown.
import { createHash, createHmac, pbkdf2, randomBytes, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { SaslAuthenticationError } from './sasl-authentication-error';

const pbkdf2Async = promisify(pbkdf2);

export const scramMechanisms = ['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;
export type ScramMechanism = (typeof scramMechanisms)[number];

/** Kafka's bounds on a credential's iteration count (ScramMechanism.minIterations/maxIterations). */
export const scramIterationsMin = 4096;
export const scramIterationsMax = 16384;
/** Kafka's default for new credentials (kafka-configs' iterations). */
export const scramIterationsDefault = 4096;
/** Random bytes in each server nonce and each new salt. */
const nonceBytes = 24;
const saltBytes = 32;
/** Longest SCRAM message accepted: RFC 5802 messages of real clients are under 1 KiB. */
export const scramMessageBytesMax = 8 * 1024;

const digests: Record<
  ScramMechanism,
  { readonly hash: 'sha256' | 'sha512'; readonly bytes: number }
> = {
  'SCRAM-SHA-256': { hash: 'sha256', bytes: 32 },
  'SCRAM-SHA-512': { hash: 'sha512', bytes: 64 },
};

export function isScramMechanism(name: string): name is ScramMechanism {
  return (scramMechanisms as readonly string[]).includes(name);
}

/** What a server keeps of one user's password for one mechanism. */
export interface ScramCredential {
  readonly mechanism: ScramMechanism;
  readonly iterations: number;
  readonly salt: Buffer;
  readonly storedKey: Buffer;
  readonly serverKey: Buffer;
}

/** RFC 5802's Hi(): PBKDF2 with HMAC of the mechanism's hash. */
export async function saltedPasswordOf(
  mechanism: ScramMechanism,
  password: string,
  salt: Buffer,
  iterations: number,
): Promise<Buffer> {
  const { hash, bytes } = digests[mechanism];
  return pbkdf2Async(
    Buffer.from(password.normalize('NFKC'), 'utf8'),
    salt,
    iterations,
    bytes,
    hash,
  );
}

/** StoredKey and ServerKey from SaltedPassword (what AlterUserScramCredentials carries). */
export function scramCredentialOf(
  mechanism: ScramMechanism,
  saltedPassword: Buffer,
  salt: Buffer,
  iterations: number,
): ScramCredential {
  const { hash } = digests[mechanism];
  const clientKey = hmac(hash, saltedPassword, 'Client Key');
  return {
    mechanism,
    iterations,
    salt,
    storedKey: createHash(hash).update(clientKey).digest(),
    serverKey: hmac(hash, saltedPassword, 'Server Key'),
  };
}

/** A new random salt of the size Spool uses. */
export function newScramSalt(): Buffer {
  return randomBytes(saltBytes);
}

/** A whole credential from a password (tests, the CLI's PLAIN checks); salt random by default. */
export async function scramCredentialFromPassword(
  mechanism: ScramMechanism,
  password: string,
  options: { readonly iterations?: number; readonly salt?: Buffer } = {},
): Promise<ScramCredential> {
  const salt = options.salt ?? newScramSalt();
  const iterations = options.iterations ?? scramIterationsDefault;
  return scramCredentialOf(
    mechanism,
    await saltedPasswordOf(mechanism, password, salt, iterations),
    salt,
    iterations,
  );
}

/** Whether a password matches a credential (SASL/PLAIN and gRPC credentials check this way). */
export async function passwordMatches(
  credential: ScramCredential,
  password: string,
): Promise<boolean> {
  const salted = await saltedPasswordOf(
    credential.mechanism,
    password,
    credential.salt,
    credential.iterations,
  );
  const candidate = scramCredentialOf(credential.mechanism, salted, credential.salt, 1);
  return timingSafeEqual(candidate.storedKey, credential.storedKey);
}

/** Finds a user's credential for a mechanism; undefined when there is none. */
export type ScramCredentialLookup = (
  user: string,
  mechanism: ScramMechanism,
) => ScramCredential | undefined;

const ScramExchangeState = {
  AwaitingClientFirst: 'awaiting-client-first',
  AwaitingClientFinal: 'awaiting-client-final',
  Complete: 'complete',
  Failed: 'failed',
} as const;
type ScramExchangeState = (typeof ScramExchangeState)[keyof typeof ScramExchangeState];

/** The failure every wrong password and unknown user gets: the same words for both. */
export function invalidCredentialsMessage(mechanism: string): string {
  return `Authentication failed during authentication due to invalid credentials with SASL mechanism ${mechanism}`;
}

/** The server's side of one SCRAM exchange (the header's steps 1 and 2). */
export class ScramServerExchange {
  private state: ScramExchangeState = ScramExchangeState.AwaitingClientFirst;
  private user = '';
  private credential: ScramCredential | undefined;
  private knownUser = false;
  private gs2Header = '';
  private nonce = '';
  private clientFirstBare = '';
  private serverFirst = '';

  constructor(
    readonly mechanism: ScramMechanism,
    private readonly lookup: ScramCredentialLookup,
    /** Secret of this process, from which an unknown user's stand-in salt is derived. */
    private readonly standInSecret: Buffer,
    /** The server's part of the nonce; random (tests pass RFC 7677's). */
    private readonly serverNonce: () => string = () => randomBytes(nonceBytes).toString('base64'),
  ) {}

  /** Step 1: returns the server-first-message. */
  receiveClientFirst(message: Buffer): Buffer {
    this.expectState(ScramExchangeState.AwaitingClientFirst);
    return this.failOnError(() => {
      const text = decodeMessage(message);
      const { gs2Header, authorizationId, bare } = splitGs2Header(text);
      const attributes = parseAttributes(bare);
      const user = decodeSaslName(requiredAttribute(attributes, 'n'));
      const clientNonce = requiredAttribute(attributes, 'r');
      checkNonce(clientNonce);
      for (const [name, value] of attributes) {
        if (name === 'n' || name === 'r') continue;
        if (name === 'm')
          throw new SaslAuthenticationError('SCRAM mandatory extensions (m=) are not supported');
        if (name === 'tokenauth' && value === 'true') {
          throw new SaslAuthenticationError('delegation tokens (tokenauth=true) are not supported');
        }
      }
      if (authorizationId !== undefined && authorizationId !== user) {
        throw new SaslAuthenticationError(
          'Authentication failed: Client requested an authorization id that is different from username',
        );
      }
      const credential = this.lookup(user, this.mechanism);
      this.knownUser = credential !== undefined;
      this.credential = credential ?? this.standInCredential(user);
      this.user = user;
      this.gs2Header = gs2Header;
      this.clientFirstBare = bare;
      this.nonce = clientNonce + this.serverNonce();
      this.serverFirst =
        `r=${this.nonce},s=${this.credential.salt.toString('base64')},` +
        `i=${this.credential.iterations}`;
      this.state = ScramExchangeState.AwaitingClientFinal;
      return Buffer.from(this.serverFirst, 'utf8');
    });
  }

  /** Step 2: returns the server-final-message and the authenticated user. */
  receiveClientFinal(message: Buffer): { readonly serverFinal: Buffer; readonly user: string } {
    this.expectState(ScramExchangeState.AwaitingClientFinal);
    return this.failOnError(() => {
      const text = decodeMessage(message);
      const proofStart = text.lastIndexOf(',p=');
      if (proofStart < 0)
        throw new SaslAuthenticationError('the SCRAM client-final-message has no proof (p=)');
      const withoutProof = text.slice(0, proofStart);
      const attributes = parseAttributes(text);
      const channelBinding = requiredAttribute(attributes, 'c');
      if (channelBinding !== Buffer.from(this.gs2Header, 'utf8').toString('base64')) {
        throw new SaslAuthenticationError(
          'the SCRAM channel binding (c=) does not match the first message',
        );
      }
      // Kafka's ScramSaslServer checks endsWith, not equality: librdkafka sends the client's
      // nonce once more in front of the combined one, and Kafka accepts that.
      if (!requiredAttribute(attributes, 'r').endsWith(this.nonce)) {
        throw new SaslAuthenticationError('the SCRAM nonce (r=) does not match the exchange');
      }
      const proof = decodeBase64(requiredAttribute(attributes, 'p'), 'p');
      const credential = this.credential!;
      const { hash, bytes } = digests[this.mechanism];
      const authMessage = `${this.clientFirstBare},${this.serverFirst},${withoutProof}`;
      const clientSignature = hmac(hash, credential.storedKey, authMessage);
      const proofMatches =
        proof.length === bytes &&
        timingSafeEqual(
          createHash(hash).update(xor(proof, clientSignature)).digest(),
          credential.storedKey,
        );
      if (!proofMatches || !this.knownUser) {
        throw new SaslAuthenticationError(invalidCredentialsMessage(this.mechanism));
      }
      this.state = ScramExchangeState.Complete;
      const serverSignature = hmac(hash, credential.serverKey, authMessage);
      return {
        serverFinal: Buffer.from(`v=${serverSignature.toString('base64')}`, 'utf8'),
        user: this.user,
      };
    });
  }

  private expectState(expected: ScramExchangeState): void {
    if (this.state !== expected) {
      const was = this.state;
      this.state = ScramExchangeState.Failed;
      throw new SaslAuthenticationError(`a SCRAM message came in state ${was}, not ${expected}`);
    }
  }

  private failOnError<T>(step: () => T): T {
    try {
      return step();
    } catch (error) {
      this.state = ScramExchangeState.Failed;
      throw error;
    }
  }

  /** Same shape as a real credential, never matching any proof, stable per user name. */
  private standInCredential(user: string): ScramCredential {
    const { hash } = digests[this.mechanism];
    const seed = hmac(hash, this.standInSecret, `${this.mechanism}:${user}`);
    return {
      mechanism: this.mechanism,
      iterations: scramIterationsDefault,
      salt: seed.subarray(0, saltBytes),
      storedKey: hmac(hash, seed, 'stored'),
      serverKey: hmac(hash, seed, 'server'),
    };
  }
}

function hmac(hash: string, key: Buffer, data: string): Buffer {
  return createHmac(hash, key).update(data, 'utf8').digest();
}

function xor(left: Buffer, right: Buffer): Buffer {
  const result = Buffer.alloc(left.length);
  for (let index = 0; index < left.length; index++) result[index] = left[index]! ^ right[index]!;
  return result;
}

function decodeMessage(message: Buffer): string {
  if (message.length === 0) throw new SaslAuthenticationError('the SCRAM message is empty');
  if (message.length > scramMessageBytesMax) {
    throw new SaslAuthenticationError(
      `the SCRAM message has ${message.length} bytes, over ${scramMessageBytesMax}`,
    );
  }
  const text = message.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(message)) {
    throw new SaslAuthenticationError('the SCRAM message is not valid UTF-8');
  }
  if (text.includes('\u0000'))
    throw new SaslAuthenticationError('the SCRAM message holds a NUL character');
  return text;
}

/** RFC 5802's gs2-header: `n,` or `y,` (no channel binding), then `[a=authzid],`. */
function splitGs2Header(text: string): {
  gs2Header: string;
  authorizationId: string | undefined;
  bare: string;
} {
  const flag = text[0];
  if (flag === 'p')
    throw new SaslAuthenticationError('SCRAM channel binding (p=) is not supported');
  if ((flag !== 'n' && flag !== 'y') || text[1] !== ',') {
    throw new SaslAuthenticationError(
      'the SCRAM client-first-message must start with the gs2 header "n,"',
    );
  }
  const authorizationEnd = text.indexOf(',', 2);
  if (authorizationEnd < 0)
    throw new SaslAuthenticationError('the SCRAM gs2 header is not terminated');
  const authorization = text.slice(2, authorizationEnd);
  let authorizationId: string | undefined;
  if (authorization !== '') {
    if (!authorization.startsWith('a=')) {
      throw new SaslAuthenticationError(
        'the SCRAM gs2 header holds something other than a=authzid',
      );
    }
    authorizationId = decodeSaslName(authorization.slice(2));
  }
  return {
    gs2Header: text.slice(0, authorizationEnd + 1),
    authorizationId,
    bare: text.slice(authorizationEnd + 1),
  };
}

/** `k=v,k=v` with each key once; values may hold `=` but not `,`. */
function parseAttributes(text: string): Map<string, string> {
  const attributes = new Map<string, string>();
  for (const part of text.split(',')) {
    const equals = part.indexOf('=');
    if (equals <= 0)
      throw new SaslAuthenticationError(`the SCRAM attribute "${clip(part)}" is not key=value`);
    const name = part.slice(0, equals);
    if (attributes.has(name))
      throw new SaslAuthenticationError(`the SCRAM attribute ${clip(name)} repeats`);
    attributes.set(name, part.slice(equals + 1));
  }
  return attributes;
}

function requiredAttribute(attributes: Map<string, string>, name: string): string {
  const value = attributes.get(name);
  if (value === undefined || value === '') {
    throw new SaslAuthenticationError(`the SCRAM message has no ${name}= attribute`);
  }
  return value;
}

/** RFC 5802's printable nonce: ASCII 0x21-0x7E except ','. */
function checkNonce(nonce: string): void {
  if (!/^[\x21-\x2b\x2d-\x7e]+$/.test(nonce)) {
    throw new SaslAuthenticationError('the SCRAM nonce holds a character outside printable ASCII');
  }
}

/** RFC 5802's saslname: `=2C` is ',', `=3D` is '='; any other '=' is malformed. */
function decodeSaslName(value: string): string {
  if (/=(?!2C|3D)/.test(value))
    throw new SaslAuthenticationError('the SCRAM user name has a bad "=" escape');
  return value.replaceAll('=2C', ',').replaceAll('=3D', '=');
}

function decodeBase64(value: string, name: string): Buffer {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4 !== 0) {
    throw new SaslAuthenticationError(`the SCRAM attribute ${name}= is not base64`);
  }
  return Buffer.from(value, 'base64');
}

function clip(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}...` : text;
}

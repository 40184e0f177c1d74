// Proves the SCRAM server against RFC 7677's SCRAM-SHA-256 example byte for byte, against a
// client of the test's own for SCRAM-SHA-512, refuses a wrong password and an unknown user with
// the same message at the same step, checks PLAIN against the stored credential, and fuzzes
// both parsers: random bytes and mutations of valid messages never throw anything but
// SaslAuthenticationError.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SaslAuthenticationError } from './sasl-authentication-error';
import { authenticatePlain, parsePlainMessage } from './sasl-plain';
import {
  ScramServerExchange,
  saltedPasswordOf,
  scramCredentialFromPassword,
  scramCredentialOf,
  type ScramCredential,
  type ScramMechanism,
} from './scram';

const secret = Buffer.from('stand-in secret of the test');

function lookupOf(users: Record<string, ScramCredential>) {
  return (user: string, mechanism: ScramMechanism): ScramCredential | undefined => {
    const credential = users[user];
    return credential?.mechanism === mechanism ? credential : undefined;
  };
}

/** A SCRAM client (RFC 5802) for the test: first message, then final from the server's first. */
async function clientExchange(
  server: ScramServerExchange,
  user: string,
  password: string,
): Promise<string> {
  const hash = server.mechanism === 'SCRAM-SHA-256' ? 'sha256' : 'sha512';
  const clientNonce = randomBytes(18).toString('base64');
  const clientFirstBare = `n=${user},r=${clientNonce}`;
  const serverFirst = server.receiveClientFirst(Buffer.from(`n,,${clientFirstBare}`)).toString();
  const fields = Object.fromEntries(
    serverFirst.split(',').map((part) => [part[0], part.slice(2)] as [string, string]),
  );
  const salted = await saltedPasswordOf(
    server.mechanism,
    password,
    Buffer.from(fields.s!, 'base64'),
    Number(fields.i),
  );
  const clientKey = createHmac(hash, salted).update('Client Key').digest();
  const storedKey = createHash(hash).update(clientKey).digest();
  const withoutProof = `c=biws,r=${fields.r}`;
  const authMessage = `${clientFirstBare},${serverFirst},${withoutProof}`;
  const signature = createHmac(hash, storedKey).update(authMessage).digest();
  const proof = Buffer.from(clientKey.map((byte, index) => byte ^ signature[index]!));
  const { serverFinal, user: authenticated } = server.receiveClientFinal(
    Buffer.from(`${withoutProof},p=${proof.toString('base64')}`),
  );
  const serverKey = createHmac(hash, salted).update('Server Key').digest();
  const expected = createHmac(hash, serverKey).update(authMessage).digest('base64');
  expect(serverFinal.toString()).toBe(`v=${expected}`);
  return authenticated;
}

describe('SCRAM server', () => {
  it("answers RFC 7677's SCRAM-SHA-256 example byte for byte", async () => {
    const salt = Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64');
    const salted = await saltedPasswordOf('SCRAM-SHA-256', 'pencil', salt, 4096);
    const credential = scramCredentialOf('SCRAM-SHA-256', salted, salt, 4096);
    const server = new ScramServerExchange(
      'SCRAM-SHA-256',
      lookupOf({ user: credential }),
      secret,
      () => '%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0',
    );
    expect(
      server.receiveClientFirst(Buffer.from('n,,n=user,r=rOprNGfwEbeRWgbNEkqO')).toString(),
    ).toBe(
      'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096',
    );
    const final = server.receiveClientFinal(
      Buffer.from(
        'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,' +
          'p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=',
      ),
    );
    expect(final.serverFinal.toString()).toBe('v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=');
    expect(final.user).toBe('user');
  });

  it('authenticates SCRAM-SHA-512 and refuses a wrong password and an unknown user alike', async () => {
    const credential = await scramCredentialFromPassword('SCRAM-SHA-512', 'alice-secret');
    const lookup = lookupOf({ alice: credential });
    expect(
      await clientExchange(
        new ScramServerExchange('SCRAM-SHA-512', lookup, secret),
        'alice',
        'alice-secret',
      ),
    ).toBe('alice');
    const refusals: string[] = [];
    for (const [user, password] of [
      ['alice', 'wrong'],
      ['mallory', 'alice-secret'],
    ] as const) {
      const error = await clientExchange(
        new ScramServerExchange('SCRAM-SHA-512', lookup, secret),
        user,
        password,
      ).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(SaslAuthenticationError);
      refusals.push((error as Error).message);
    }
    expect(refusals[0]).toBe(refusals[1]);
    expect(refusals[0]).toContain('invalid credentials with SASL mechanism SCRAM-SHA-512');
  });

  it("gives an unknown user a salt and iteration count as a known user's, stable per name", () => {
    const lookup = lookupOf({});
    const first = (user: string): string[] =>
      new ScramServerExchange('SCRAM-SHA-256', lookup, secret)
        .receiveClientFirst(Buffer.from(`n,,n=${user},r=abc`))
        .toString()
        .split(',')
        .slice(1);
    expect(first('mallory')).toEqual(first('mallory'));
    expect(first('mallory')).not.toEqual(first('trudy'));
    expect(first('mallory')[1]).toBe('i=4096');
  });

  it.each([
    ['p=tls-unique,,n=user,r=abc', 'channel binding'],
    ['x,,n=user,r=abc', 'gs2 header'],
    ['n,a=bob,n=user,r=abc', 'authorization id'],
    ['n,,n=user', 'no r= attribute'],
    ['n,,n=us=er,r=abc', 'escape'],
    ['n,,n=user,r=abc,tokenauth=true', 'delegation tokens'],
    ['n,,n=user,r=a b', 'printable'],
    ['n,,n=user,n=other,r=abc', 'repeats'],
  ])('refuses the client-first-message %s (%s)', (message, reason) => {
    const server = new ScramServerExchange('SCRAM-SHA-256', lookupOf({}), secret);
    expect(() => server.receiveClientFirst(Buffer.from(message))).toThrow(reason);
  });

  it('refuses a final message out of order, a wrong nonce and a wrong channel binding', () => {
    const fresh = (): ScramServerExchange =>
      new ScramServerExchange('SCRAM-SHA-256', lookupOf({}), secret, () => 'SERVER');
    expect(() => fresh().receiveClientFinal(Buffer.from('c=biws,r=x,p=AAAA'))).toThrow('state');
    const wrongNonce = fresh();
    wrongNonce.receiveClientFirst(Buffer.from('n,,n=user,r=abc'));
    expect(() => wrongNonce.receiveClientFinal(Buffer.from('c=biws,r=abcSERVERX,p=AAAA'))).toThrow(
      'nonce',
    );
    const wrongBinding = fresh();
    wrongBinding.receiveClientFirst(Buffer.from('n,,n=user,r=abc'));
    expect(() => wrongBinding.receiveClientFinal(Buffer.from('c=eSws,r=abcSERVER,p=AAAA'))).toThrow(
      'channel binding',
    );
    // A failed exchange stays failed.
    expect(() => wrongBinding.receiveClientFinal(Buffer.from('c=biws,r=abcSERVER,p=AAAA'))).toThrow(
      'state',
    );
  });

  it('throws only SaslAuthenticationError for fuzzed messages (2,000 of each kind)', () => {
    let seed = 26;
    const next = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const valid = [
      'n,,n=user,r=rOprNGfwEbeRWgbNEkqO',
      'c=biws,r=rOprNGfwEbeRWgbNEkqOSERVER,p=AAAA',
    ];
    const mutate = (text: string): Buffer => {
      const bytes = Buffer.from(text);
      const kind = Math.floor(next() * 4);
      if (kind === 0)
        return Buffer.from(Array.from({ length: Math.floor(next() * 80) }, () => next() * 256));
      if (kind === 1) return bytes.subarray(0, Math.floor(next() * bytes.length));
      for (let flips = 0; flips < 3; flips++)
        bytes[Math.floor(next() * bytes.length)] = next() * 256;
      return kind === 2 ? bytes : Buffer.concat([bytes, Buffer.from(',=,x=y,,')]);
    };
    const unexpected: unknown[] = [];
    const attempt = (run: () => unknown): void => {
      try {
        run();
      } catch (error) {
        if (!(error instanceof SaslAuthenticationError)) unexpected.push(error);
      }
    };
    for (let round = 0; round < 2_000; round++) {
      attempt(() =>
        new ScramServerExchange('SCRAM-SHA-256', lookupOf({}), secret).receiveClientFirst(
          mutate(valid[0]!),
        ),
      );
      const second = new ScramServerExchange('SCRAM-SHA-512', lookupOf({}), secret, () => 'SERVER');
      second.receiveClientFirst(Buffer.from(valid[0]!));
      attempt(() => second.receiveClientFinal(mutate(valid[1]!)));
      attempt(() => parsePlainMessage(mutate('\u0000alice\u0000secret')));
    }
    expect(unexpected).toEqual([]);
  });
});

describe('SASL/PLAIN', () => {
  it('checks the password against the stored SCRAM credential', async () => {
    const credential = await scramCredentialFromPassword('SCRAM-SHA-256', 'alice-secret');
    const standIn = await scramCredentialFromPassword(
      'SCRAM-SHA-512',
      randomBytes(16).toString('hex'),
    );
    const lookup = lookupOf({ alice: credential });
    const plain = (text: string): Promise<string> =>
      authenticatePlain(Buffer.from(text), lookup, standIn);
    await expect(plain('\u0000alice\u0000alice-secret')).resolves.toBe('alice');
    await expect(plain('alice\u0000alice\u0000alice-secret')).resolves.toBe('alice');
    const wrong = await plain('\u0000alice\u0000nope').catch((error: unknown) => error);
    const unknown = await plain('\u0000mallory\u0000alice-secret').catch((error: unknown) => error);
    expect(wrong).toBeInstanceOf(SaslAuthenticationError);
    expect((unknown as Error).message).toBe((wrong as Error).message);
    await expect(plain('bob\u0000alice\u0000alice-secret')).rejects.toThrow('authorization id');
    await expect(plain('alice\u0000alice-secret')).rejects.toThrow('3 tokens');
  });
});

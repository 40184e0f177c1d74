/**
 * Bootstrap users: SCRAM users the active controller makes sure exist with a known password, so
 * a cluster installed with authentication on has someone who may log in (the chart's first
 * admin, from a Kubernetes Secret). Kafka's counterpart is `kafka-storage format --add-scram`,
 * which writes credentials into the metadata log before the first start.
 *
 * Unlike Kafka's, which only formats, this reconciles: on every takeover (and each maintenance
 * round until it succeeds) a bootstrap user gets a SCRAM-SHA-256 and a SCRAM-SHA-512 credential
 * if either is missing or does not match the configured password, so rotating the Secret's
 * password rotates the user's. A matching credential is left alone, salt and all: nothing is
 * written when nothing changed. The password itself is never stored: the credential is derived
 * here (a fresh salt, Kafka's default iterations) and the controller's usual AlterUserScram path
 * writes it.
 */
import {
  passwordMatches,
  saltedPasswordOf,
  scramIterationsDefault,
  scramMechanisms,
  newScramSalt,
  type ScramMechanism,
} from '@spool/common';
import type { ControllerContext } from './controller-context';
import {
  alterUserScramCredentials,
  checkUserName,
  type StoredScramCredential,
} from './user-credentials';

export interface BootstrapScramUser {
  readonly user: string;
  readonly password: string;
}

/** Writes what the bootstrap users lack; returns how many credentials were written. */
export async function ensureBootstrapUsers(
  context: ControllerContext,
  users: readonly BootstrapScramUser[],
): Promise<number> {
  let written = 0;
  for (const { user, password } of users) {
    checkUserName(user);
    const stored = context.state.users.get(user)?.record.credentials ?? [];
    const stale: ScramMechanism[] = [];
    for (const mechanism of scramMechanisms) {
      const credential = stored.find((candidate) => candidate.mechanism === mechanism);
      if (credential === undefined || !(await matches(credential, mechanism, password))) {
        stale.push(mechanism);
      }
    }
    if (stale.length === 0) continue;
    const upsertions = await Promise.all(
      stale.map(async (mechanism) => {
        const salt = newScramSalt();
        return {
          user,
          mechanism,
          iterations: scramIterationsDefault,
          salt,
          saltedPassword: await saltedPasswordOf(mechanism, password, salt, scramIterationsDefault),
        };
      }),
    );
    const [outcome] = await alterUserScramCredentials(
      { deletions: [], upsertions },
      context.state,
      context.writer,
    );
    if (outcome?.error !== undefined) throw outcome.error;
    written += stale.length;
    context.logger.info(
      { user, mechanisms: stale },
      'bootstrap user credentials written (missing or not matching the configured password)',
    );
  }
  return written;
}

function matches(
  credential: StoredScramCredential,
  mechanism: ScramMechanism,
  password: string,
): Promise<boolean> {
  return passwordMatches(
    {
      mechanism,
      iterations: credential.iterations,
      salt: Buffer.from(credential.salt, 'base64'),
      storedKey: Buffer.from(credential.storedKey, 'base64'),
      serverKey: Buffer.from(credential.serverKey, 'base64'),
    },
    password,
  );
}

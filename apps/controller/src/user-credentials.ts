/**
 * Users' SCRAM credentials (Kafka's AlterUserScramCredentials and DescribeUserScramCredentials,
 * KIP-554): one key per user, `/spool/<cluster>/users/<user>`, holding a JSON record of at most
 * one credential per mechanism: the salt, the iteration count, StoredKey and ServerKey, in
 * base64. The password never reaches the controller: a caller sends the salted password, from
 * which the controller derives the keys and then forgets it.
 *
 * An alteration is checked and written per user, as Kafka answers per user:
 * 1. Every deletion and upsertion of the user is checked: a user name
 *    (UNACCEPTABLE_CREDENTIAL), a known mechanism (UNSUPPORTED_SASL_MECHANISM), iterations in
 *    4096..16384 and a salted password of the mechanism's size (UNACCEPTABLE_CREDENTIAL), one
 *    change per mechanism (DUPLICATE_RESOURCE), a deletion of a credential that exists
 *    (RESOURCE_NOT_FOUND). Any failure refuses all of the user's changes and writes nothing.
 * 2. The user's new record is written with a compare on the record read (absent or its
 *    modRevision); a user left without credentials is deleted.
 */
import {
  SpoolError,
  isScramMechanism,
  scramCredentialOf,
  scramIterationsMax,
  scramIterationsMin,
} from '@spool/common';
import type { Compare, Operation } from '@spool/metadata';
import type {
  AlterUserScramCredentialsRequest,
  DescribeUserScramCredentialsResponse,
  ScramCredential as ScramCredentialMessage,
  UserScramCredentials,
} from '@spool/protocol';
import type { ClusterState } from './cluster-state';
import type { MetadataWriter } from './metadata-writer';

/** User names that fit a metadata key, a SASL name and a Kafka principal unambiguously. */
const userNamePattern = /^[A-Za-z0-9._@+-]{1,255}$/;

/** Users the cluster holds, at most: every gateway keeps all of them in memory. */
export const usersMax = 10_000;

export interface StoredScramCredential {
  readonly mechanism: string;
  readonly iterations: number;
  /** base64 */
  readonly salt: string;
  readonly storedKey: string;
  readonly serverKey: string;
}

export interface UserRecord {
  readonly name: string;
  readonly credentials: readonly StoredScramCredential[];
}

export interface UserState {
  readonly record: UserRecord;
  readonly modRevision: bigint;
}

export function encodeUserRecord(record: UserRecord): Buffer {
  return Buffer.from(JSON.stringify(record));
}

export function decodeUserRecord(bytes: Buffer): UserRecord {
  const value = JSON.parse(bytes.toString('utf8')) as Partial<UserRecord> | null;
  if (
    typeof value !== 'object' ||
    value === null ||
    typeof value.name !== 'string' ||
    !Array.isArray(value.credentials) ||
    !value.credentials.every(
      (credential: Partial<StoredScramCredential>) =>
        typeof credential.mechanism === 'string' &&
        Number.isInteger(credential.iterations) &&
        typeof credential.salt === 'string' &&
        typeof credential.storedKey === 'string' &&
        typeof credential.serverKey === 'string',
    )
  ) {
    throw new Error('user record is missing fields');
  }
  return value as UserRecord;
}

/** The record as the metadata stream carries it to the gateways. */
export function userCredentialsOf(record: UserRecord): UserScramCredentials {
  return {
    user: record.name,
    credentials: record.credentials.map((credential): ScramCredentialMessage => ({
      mechanism: credential.mechanism,
      iterations: credential.iterations,
      salt: Buffer.from(credential.salt, 'base64'),
      storedKey: Buffer.from(credential.storedKey, 'base64'),
      serverKey: Buffer.from(credential.serverKey, 'base64'),
    })),
  };
}

export function checkUserName(name: string): void {
  if (!userNamePattern.test(name)) {
    throw new SpoolError(
      'UNACCEPTABLE_CREDENTIAL',
      `user name ${JSON.stringify(name.slice(0, 300))} must be 1 to 255 characters of ` +
        'letters, digits and . _ @ + -',
    );
  }
}

export interface UserAlterationOutcome {
  readonly user: string;
  readonly error: SpoolError | undefined;
}

/** Every change of one user, in request order. */
interface UserChanges {
  readonly deletions: string[];
  readonly upsertions: AlterUserScramCredentialsRequest['upsertions'][number][];
}

export async function alterUserScramCredentials(
  request: AlterUserScramCredentialsRequest,
  state: ClusterState,
  writer: MetadataWriter,
): Promise<UserAlterationOutcome[]> {
  const byUser = new Map<string, UserChanges>();
  const changesOf = (user: string): UserChanges => {
    let changes = byUser.get(user);
    if (changes === undefined) {
      changes = { deletions: [], upsertions: [] };
      byUser.set(user, changes);
    }
    return changes;
  };
  for (const deletion of request.deletions)
    changesOf(deletion.user).deletions.push(deletion.mechanism);
  for (const upsertion of request.upsertions) changesOf(upsertion.user).upsertions.push(upsertion);
  const outcomes: UserAlterationOutcome[] = [];
  for (const [user, changes] of byUser) {
    try {
      await alterUser(user, changes, state, writer);
      outcomes.push({ user, error: undefined });
    } catch (error) {
      if (!(error instanceof SpoolError) || error.code === 'NOT_CONTROLLER') throw error;
      outcomes.push({ user, error });
    }
  }
  return outcomes;
}

/** Steps 1 and 2 for one user. */
async function alterUser(
  user: string,
  changes: UserChanges,
  state: ClusterState,
  writer: MetadataWriter,
): Promise<void> {
  checkUserName(user);
  const current = state.users.get(user);
  const credentials = new Map(
    (current?.record.credentials ?? []).map((credential) => [credential.mechanism, credential]),
  );
  const seen = new Set<string>();
  const once = (mechanism: string): void => {
    if (!isScramMechanism(mechanism)) {
      throw new SpoolError(
        'UNSUPPORTED_SASL_MECHANISM',
        `unknown SCRAM mechanism ${JSON.stringify(mechanism)}: SCRAM-SHA-256 or SCRAM-SHA-512`,
      );
    }
    if (seen.has(mechanism)) {
      throw new SpoolError(
        'DUPLICATE_RESOURCE',
        `user ${user} has more than one change of ${mechanism} in one request`,
      );
    }
    seen.add(mechanism);
  };
  for (const mechanism of changes.deletions) {
    once(mechanism);
    if (!credentials.delete(mechanism)) {
      throw new SpoolError('RESOURCE_NOT_FOUND', `user ${user} has no ${mechanism} credential`);
    }
  }
  for (const upsertion of changes.upsertions) {
    const mechanism = upsertion.mechanism;
    once(mechanism);
    if (!isScramMechanism(mechanism)) continue;
    if (
      !Number.isInteger(upsertion.iterations) ||
      upsertion.iterations < scramIterationsMin ||
      upsertion.iterations > scramIterationsMax
    ) {
      throw new SpoolError(
        'UNACCEPTABLE_CREDENTIAL',
        `${mechanism} iterations ${upsertion.iterations} is outside ${scramIterationsMin} to ` +
          `${scramIterationsMax}`,
      );
    }
    const digestBytes = mechanism === 'SCRAM-SHA-256' ? 32 : 64;
    if (upsertion.saltedPassword.length !== digestBytes || upsertion.salt.length === 0) {
      throw new SpoolError(
        'UNACCEPTABLE_CREDENTIAL',
        `a ${mechanism} credential needs a salt and a ${digestBytes}-byte salted password`,
      );
    }
    const derived = scramCredentialOf(
      mechanism,
      Buffer.from(upsertion.saltedPassword),
      Buffer.from(upsertion.salt),
      upsertion.iterations,
    );
    credentials.set(mechanism, {
      mechanism,
      iterations: derived.iterations,
      salt: derived.salt.toString('base64'),
      storedKey: derived.storedKey.toString('base64'),
      serverKey: derived.serverKey.toString('base64'),
    });
  }
  if (current === undefined && state.users.size >= usersMax) {
    throw new SpoolError('UNACCEPTABLE_CREDENTIAL', `the cluster holds ${usersMax} users already`);
  }
  const key = writer.metadataKeys.user(user);
  const compare: Compare =
    current === undefined
      ? { key, kind: 'absent' }
      : { key, kind: 'modRevision', equals: current.modRevision };
  const operation: Operation =
    credentials.size === 0
      ? { kind: 'delete', key }
      : {
          kind: 'put',
          key,
          value: encodeUserRecord({
            name: user,
            credentials: [...credentials.values()].sort((left, right) =>
              left.mechanism.localeCompare(right.mechanism),
            ),
          }),
        };
  await writer.commit([compare], [operation]);
}

/** The users asked for (every user when none is named), without their keys. */
export function describeUserScramCredentials(
  users: readonly string[],
  state: ClusterState,
): DescribeUserScramCredentialsResponse {
  const names = users.length === 0 ? [...state.users.keys()].sort() : [...new Set(users)];
  return {
    results: names.map((user) => {
      const found = state.users.get(user);
      return {
        user,
        error:
          found === undefined
            ? {
                code: 'RESOURCE_NOT_FOUND',
                message: `Attempt to describe a user credential that does not exist: ${user}`,
                retriable: false,
              }
            : undefined,
        credentials: (found?.record.credentials ?? []).map(({ mechanism, iterations }) => ({
          mechanism,
          iterations,
        })),
      };
    }),
  };
}

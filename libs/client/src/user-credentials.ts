/**
 * Users' SCRAM credentials from the SDK (Kafka's Admin.alterUserScramCredentials and
 * describeUserScramCredentials). A password never leaves this process: the SDK salts and hashes
 * it (PBKDF2 with a new random salt) and sends the salted password, as Kafka's admin client
 * does; the controller derives and keeps StoredKey and ServerKey.
 */
import {
  SpoolError,
  newScramSalt,
  saltedPasswordOf,
  scramIterationsDefault,
  type ScramMechanism,
} from '@spool/common';
import { fromProtoError } from './errors';
import type { GatewayCallOptions, GatewayConnection } from './gateway-connection';

export interface UserScramCredentialUpsertion {
  readonly user: string;
  readonly mechanism: ScramMechanism;
  readonly password: string;
  /** 4096 (Kafka's minimum and default) to 16384. */
  readonly iterations?: number;
}

export interface UserScramCredentialDeletion {
  readonly user: string;
  readonly mechanism: ScramMechanism;
}

export interface UserScramCredentialsDescription {
  readonly user: string;
  readonly credentials: readonly { readonly mechanism: string; readonly iterations: number }[];
}

export async function alterUserScramCredentials(
  connection: GatewayConnection,
  request: {
    readonly upsertions?: readonly UserScramCredentialUpsertion[];
    readonly deletions?: readonly UserScramCredentialDeletion[];
  },
  options: GatewayCallOptions,
): Promise<void> {
  const upsertions = await Promise.all(
    (request.upsertions ?? []).map(async (upsertion) => {
      if (upsertion.password === '') {
        throw new SpoolError(
          'UNACCEPTABLE_CREDENTIAL',
          `the password of ${upsertion.user} is empty`,
        );
      }
      const salt = newScramSalt();
      const iterations = upsertion.iterations ?? scramIterationsDefault;
      return {
        user: upsertion.user,
        mechanism: upsertion.mechanism,
        iterations,
        salt,
        saltedPassword: await saltedPasswordOf(
          upsertion.mechanism,
          upsertion.password,
          salt,
          iterations,
        ),
      };
    }),
  );
  const response = await connection.call(
    (client) => client.alterUserScramCredentials,
    { upsertions, deletions: [...(request.deletions ?? [])] },
    options,
  );
  const failures = response.results.filter(
    (result) => result.error !== undefined && result.error.code !== '',
  );
  if (failures.length === 1) throw fromProtoError(failures[0]!.error!, `user ${failures[0]!.user}`);
  if (failures.length > 1) {
    throw new SpoolError(
      failures[0]!.error!.code,
      failures.map((failure) => `user ${failure.user}: ${failure.error!.message}`).join('; '),
    );
  }
}

export async function describeUserScramCredentials(
  connection: GatewayConnection,
  users: readonly string[],
  options: GatewayCallOptions,
): Promise<UserScramCredentialsDescription[]> {
  const response = await connection.call(
    (client) => client.describeUserScramCredentials,
    { users: [...users] },
    options,
  );
  return response.results.map((result) => {
    if (result.error !== undefined && result.error.code !== '') {
      throw fromProtoError(result.error, `user ${result.user}`);
    }
    return { user: result.user, credentials: result.credentials };
  });
}

/**
 * DescribeUserScramCredentials (API 50) and AlterUserScramCredentials (API 51), KIP-554, on the
 * controller's calls that `spool user` uses (user-admin-handlers.ts): one user store for both.
 *
 * 1. Alter: the client salts and hashes the password (kafka-configs, the Admin client, the
 *    SDK); the request carries the salt, the iteration count and the salted password only, and
 *    the controller derives StoredKey and ServerKey from them. Kafka's mechanism numbers (1
 *    SCRAM-SHA-256, 2 SCRAM-SHA-512) become their names; any other number reaches the
 *    controller as an unknown name, which answers UNSUPPORTED_SASL_MECHANISM. Every user is
 *    answered on its own (UNACCEPTABLE_CREDENTIAL, DUPLICATE_RESOURCE, RESOURCE_NOT_FOUND) and a
 *    refused user's changes write nothing.
 * 2. Describe: null or no users lists every user; a user named twice is DUPLICATE_RESOURCE and
 *    is not asked for, an unknown one RESOURCE_NOT_FOUND, as Kafka answers.
 * 3. ACLs (under an authorizer): ALTER on the cluster to alter, refused as Kafka does with
 *    CLUSTER_AUTHORIZATION_FAILED on every user of the request; DESCRIBE on the cluster to
 *    describe (kafka-authorization.ts, top-level error).
 */
import { AclOperation } from '@spool/authorizer';
import {
  ApiKey,
  type AlterUserScramCredentialsRequest,
  type AlterUserScramCredentialsResponse,
  type DescribeUserScramCredentialsRequest,
  type DescribeUserScramCredentialsResponse,
  defaultAlterUserScramCredentialsResponse,
  defaultDescribeUserScramCredentialsResponse,
  readAlterUserScramCredentialsRequest,
  readDescribeUserScramCredentialsRequest,
  writeAlterUserScramCredentialsResponse,
  writeDescribeUserScramCredentialsResponse,
} from '@spool/kafka-protocol';
import type { MetadataLink } from '../metadata-link';
import { userAdminHandlers } from '../user-admin-handlers';
import type { KafkaApi } from './kafka-api-dispatcher';
import type { CustomGate } from './kafka-authorization';
import { KafkaErrorNumber, kafkaErrorOf } from './kafka-errors';

/** Kafka's ScramMechanism numbers (0 is UNKNOWN). */
const scramMechanismNames = new Map<number, string>([
  [1, 'SCRAM-SHA-256'],
  [2, 'SCRAM-SHA-512'],
]);
const scramMechanismNumbers = new Map<string, number>(
  [...scramMechanismNames].map(([number, name]) => [name, number]),
);
/** Kafka's DUPLICATE_RESOURCE. */
const duplicateResource = 92;

/** A mechanism's name, or a name the controller refuses as UNSUPPORTED_SASL_MECHANISM. */
export function scramMechanismName(mechanism: number): string {
  return scramMechanismNames.get(mechanism) ?? `UNKNOWN(${mechanism})`;
}

/** Every user an alteration names, once, in the order of first mention. */
function usersOf(request: AlterUserScramCredentialsRequest): string[] {
  return [
    ...new Set([
      ...request.deletions.map((deletion) => deletion.name),
      ...request.upsertions.map((upsertion) => upsertion.name),
    ]),
  ];
}

/** Point 3 for Alter: the response has no top-level error, so each user carries it. */
export const alterUserScramCredentialsGate: CustomGate<
  AlterUserScramCredentialsRequest,
  AlterUserScramCredentialsResponse
> = (request, _version, context, authorizer) => {
  if (authorizer.authorizeCluster(context, AclOperation.Alter)) {
    return { request, complete: (response) => response };
  }
  return {
    refused: {
      ...defaultAlterUserScramCredentialsResponse(),
      results: usersOf(request).map((user) => ({
        user,
        errorCode: KafkaErrorNumber.ClusterAuthorizationFailed,
        errorMessage: `${context.principal} may not ALTER the cluster`,
      })),
    },
  };
};

export function userScramCredentialApis(link: MetadataLink): Array<KafkaApi<never, never>> {
  const users = userAdminHandlers(link);

  const alter: KafkaApi<AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse> = {
    apiKey: ApiKey.AlterUserScramCredentials,
    minVersion: 0,
    maxVersion: 0,
    read: readAlterUserScramCredentialsRequest,
    write: writeAlterUserScramCredentialsResponse,
    serve: async (request) => {
      // Point 1.
      const answer = await users.alterUserScramCredentials({
        deletions: request.deletions.map((deletion) => ({
          user: deletion.name,
          mechanism: scramMechanismName(deletion.mechanism),
        })),
        upsertions: request.upsertions.map((upsertion) => ({
          user: upsertion.name,
          mechanism: scramMechanismName(upsertion.mechanism),
          iterations: upsertion.iterations,
          salt: upsertion.salt,
          saltedPassword: upsertion.saltedPassword,
        })),
      });
      return {
        ...defaultAlterUserScramCredentialsResponse(),
        results: answer.results.map((result) => ({
          user: result.user,
          ...kafkaErrorOf(result.error),
        })),
      };
    },
  };

  const describe: KafkaApi<
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse
  > = {
    apiKey: ApiKey.DescribeUserScramCredentials,
    minVersion: 0,
    maxVersion: 0,
    read: readDescribeUserScramCredentialsRequest,
    write: writeDescribeUserScramCredentialsResponse,
    serve: async (request) => {
      // Point 2.
      const named = (request.users ?? []).map((user) => user.name);
      const duplicated = new Set(named.filter((user, index) => named.indexOf(user) !== index));
      const asked = named.filter((user) => !duplicated.has(user));
      const answer =
        named.length > 0 && asked.length === 0
          ? { results: [] }
          : await users.describeUserScramCredentials({ users: asked });
      return {
        ...defaultDescribeUserScramCredentialsResponse(),
        errorMessage: null,
        results: [
          ...answer.results.map((result) => ({
            user: result.user,
            ...kafkaErrorOf(result.error),
            credentialInfos: result.credentials.map((credential) => ({
              mechanism: scramMechanismNumbers.get(credential.mechanism) ?? 0,
              iterations: credential.iterations,
            })),
          })),
          ...[...duplicated].map((user) => ({
            user,
            errorCode: duplicateResource,
            errorMessage:
              'Cannot describe SCRAM credentials for the same user twice in a single request: ' +
              user,
            credentialInfos: [],
          })),
        ],
      };
    },
  };

  return [alter, describe] as unknown as Array<KafkaApi<never, never>>;
}

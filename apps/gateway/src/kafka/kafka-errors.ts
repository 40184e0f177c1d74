/**
 * Spool's error codes as numbers on Kafka's wire. Kafka's own codes keep their number; Spool's
 * own errors, which Kafka has no code for, go out as UNKNOWN_SERVER_ERROR (-1), as the catalog
 * says (@spool/errors).
 */
import { errorDefinitionOf } from '@spool/errors';

export const kafkaNoError = 0;
export const kafkaUnknownServerError = -1;

/** Kafka's numbers for the codes the listener answers with itself. */
export const KafkaErrorNumber = {
  UnknownTopicOrPartition: 3,
  LeaderNotAvailable: 5,
  RequestTimedOut: 7,
  CoordinatorLoadInProgress: 14,
  CoordinatorNotAvailable: 15,
  InvalidRequiredAcks: 21,
  TopicAuthorizationFailed: 29,
  GroupAuthorizationFailed: 30,
  ClusterAuthorizationFailed: 31,
  UnsupportedVersion: 35,
  InvalidRequest: 42,
  TransactionalIdAuthorizationFailed: 53,
  FetchSessionIdNotFound: 70,
  UnknownTopicId: 100,
} as const;

/** The Kafka number of an error code ('' or undefined: no error). */
export function kafkaErrorNumberOf(code: string | undefined): number {
  if (code === undefined || code === '') return kafkaNoError;
  return errorDefinitionOf(code)?.kafkaCode ?? kafkaUnknownServerError;
}

/** The number and message of a ProtoError-shaped error, for responses that carry both. */
export function kafkaErrorOf(error: { code: string; message: string } | undefined): {
  errorCode: number;
  errorMessage: string | null;
} {
  if (error === undefined) return { errorCode: kafkaNoError, errorMessage: null };
  return { errorCode: kafkaErrorNumberOf(error.code), errorMessage: error.message };
}

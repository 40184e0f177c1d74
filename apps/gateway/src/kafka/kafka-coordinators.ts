/**
 * FindCoordinator and InitProducerId.
 *
 * FindCoordinator names a storage broker of the cluster view (a hash of the group id picks it,
 * kafka-cluster-view.ts point 4): its port is this gateway's, and any gateway forwards a group's
 * calls to the coordinator that owns its shard. Only group keys are served: Spool has no transaction coordinator, so a transactional key is answered
 * INVALID_REQUEST with that reason.
 *
 * InitProducerId gives an idempotent producer its id and epoch from the coordinators, the same
 * ids the SDK's idempotent producer gets (group-handlers.ts); the leaders' producer state then
 * deduplicates its retried batches. A transactional id is INVALID_REQUEST: no transactions.
 */
import {
  type FindCoordinatorRequest,
  type FindCoordinatorResponse,
  type InitProducerIdRequest,
  type InitProducerIdResponse,
  defaultFindCoordinatorResponse,
  defaultInitProducerIdResponse,
  readFindCoordinatorRequest,
  readInitProducerIdRequest,
  writeFindCoordinatorResponse,
  writeInitProducerIdResponse,
} from '@spool/kafka-protocol';
import type { InitProducerIdRequest as SpoolInitProducerIdRequest } from '@spool/protocol';
import type { InitProducerIdResponse as SpoolInitProducerIdResponse } from '@spool/protocol';
import type { KafkaApi } from './kafka-api-dispatcher';
import type { KafkaClusterView } from './kafka-cluster-view';
import { KafkaErrorNumber, kafkaErrorNumberOf } from './kafka-errors';

const findCoordinatorApiKey = 10;
const initProducerIdApiKey = 22;
/** The first FindCoordinator version with a batch of keys (KIP-699). */
const batchedKeysVersion = 4;
const groupKeyType = 0;

interface CoordinatorAnswer {
  nodeId: number;
  host: string;
  port: number;
  errorCode: number;
  errorMessage: string | null;
}

export function findCoordinatorApi(
  view: KafkaClusterView,
): KafkaApi<FindCoordinatorRequest, FindCoordinatorResponse> {
  const answerFor = (keyType: number, key: string): CoordinatorAnswer => {
    const failed = (errorCode: number, errorMessage: string): CoordinatorAnswer => ({
      nodeId: -1,
      host: '',
      port: -1,
      errorCode,
      errorMessage,
    });
    if (keyType !== groupKeyType) {
      return failed(
        KafkaErrorNumber.InvalidRequest,
        `key type ${keyType} is not served: Spool has group coordinators only (no transactions)`,
      );
    }
    if (view.link.metadata.coordinators.size === 0) {
      return failed(KafkaErrorNumber.CoordinatorNotAvailable, 'no coordinator is registered yet');
    }
    const broker = view.coordinatorOf(key);
    if (broker === undefined) {
      return failed(KafkaErrorNumber.CoordinatorNotAvailable, 'no storage broker is listed yet');
    }
    const { nodeId, host, port } = broker;
    return { nodeId, host, port, errorCode: 0, errorMessage: null };
  };
  return {
    apiKey: findCoordinatorApiKey,
    minVersion: 0,
    maxVersion: 5,
    read: readFindCoordinatorRequest,
    write: writeFindCoordinatorResponse,
    serve: async (request, version) => {
      await view.prepare();
      if (version >= batchedKeysVersion) {
        return {
          ...defaultFindCoordinatorResponse(),
          coordinators: request.coordinatorKeys.map((key) => ({
            key,
            ...answerFor(request.keyType, key),
          })),
        };
      }
      return { ...defaultFindCoordinatorResponse(), ...answerFor(request.keyType, request.key) };
    },
  };
}

export function initProducerIdApi(
  initProducerId: (request: SpoolInitProducerIdRequest) => Promise<SpoolInitProducerIdResponse>,
): KafkaApi<InitProducerIdRequest, InitProducerIdResponse> {
  return {
    apiKey: initProducerIdApiKey,
    minVersion: 0,
    maxVersion: 4,
    read: readInitProducerIdRequest,
    write: writeInitProducerIdResponse,
    serve: async (request) => {
      if (request.transactionalId !== null) {
        return { ...defaultInitProducerIdResponse(), errorCode: KafkaErrorNumber.InvalidRequest };
      }
      const answer = await initProducerId({
        producerId: request.producerId,
        producerEpoch: request.producerEpoch,
      });
      return {
        ...defaultInitProducerIdResponse(),
        errorCode: kafkaErrorNumberOf(answer.error?.code),
        producerId: answer.producerId,
        producerEpoch: answer.producerEpoch,
      };
    },
  };
}

// How the data port answers a request whose handler failed: as Kafka's KafkaApis.handleError,
// every requested partition carries the error's code, so the connection and the requests
// pipelined behind it go on. Codes come from coded errors (SpoolError, ProtocolError, ...);
// anything else is UNKNOWN_SERVER_ERROR.
import { isCodedError } from '@spool/common';
import {
  type DataPortFetchRequest,
  type DataPortOffsetForLeaderEpochRequest,
  type DataPortOffsetForLeaderEpochResponse,
  errorCodeBytesMax,
  fetchSessionIdNone,
} from '@spool/protocol';
import type { FetchResult } from './data-port-handlers';

const unknownServerErrorCode = 'UNKNOWN_SERVER_ERROR';

export interface ErrorAnswer {
  readonly errorCode: string;
  readonly errorMessage: string;
}

export function errorAnswerOf(error: unknown): ErrorAnswer {
  if (isCodedError(error) && error.code.length > 0 && error.code.length <= errorCodeBytesMax) {
    return { errorCode: error.code, errorMessage: error.message };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { errorCode: unknownServerErrorCode, errorMessage: message };
}

/**
 * A fetch answer with `answer` for every requested partition and no records. A request with a
 * fetch session gets "no session" back, so its fetcher starts over with a full fetch.
 */
export function fetchErrorResult(request: DataPortFetchRequest, answer: ErrorAnswer): FetchResult {
  return {
    ...(request.session === undefined
      ? {}
      : { session: { errorCode: '', errorMessage: '', sessionId: fetchSessionIdNone } }),
    partitions: request.partitions.map((partition) => ({
      topic: partition.topic,
      partition: partition.partition,
      ...answer,
      highWatermark: -1n,
      logStartOffset: -1n,
      logEndOffset: -1n,
      slices: [],
      sizeBytes: 0,
    })),
    release: () => undefined,
  };
}

/** An OFFSET_FOR_LEADER_EPOCH answer with `answer` for every requested partition. */
export function offsetForLeaderEpochErrorResponse(
  request: DataPortOffsetForLeaderEpochRequest,
  answer: ErrorAnswer,
): DataPortOffsetForLeaderEpochResponse {
  return {
    partitions: request.partitions.map((partition) => ({
      topic: partition.topic,
      partition: partition.partition,
      ...answer,
      leaderEpoch: -1,
      endOffset: -1n,
    })),
  };
}

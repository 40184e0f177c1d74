/**
 * The gateway's side of ProduceStream (gateway.proto): a client's produce requests pipelined on
 * one long-lived stream per client connection, each run as a unary Produce would
 * (produce-handler.ts) and answered with its correlation id when done, in completion order
 * (PipelinedStreamServer in @spool/common: started in arrival order, bounded, counted and timed
 * as a Produce).
 *
 * - A request refused as a whole (over the connection's in-flight bytes, ProduceAdmission) is
 *   answered with that error on every partition it names, so the client retries each batch as it
 *   would after a refused unary Produce.
 * - stop() at the start of shutdown: each stream finishes the produces it started, answers them
 *   and ends; the client sends what was left unanswered again (none of it was started), to this
 *   gateway's successor or another gateway.
 */
import {
  PipelinedStreamServer,
  wireErrorOf,
  type Logger,
  type RequestMetrics,
} from '@spool/common';
import type { ProduceStreamRequest, ProduceStreamResponse } from '@spool/protocol';
import { failedResult, handleProduce, type ProduceDependencies } from './produce-handler';

/** Produces of one stream running at once, at most (a Kafka producer's in-flight bound is 5). */
export const produceStreamInFlightMax = 256;

export type ProduceStreams = PipelinedStreamServer<ProduceStreamRequest, ProduceStreamResponse>;

export function produceStreams(
  dependencies: ProduceDependencies,
  requestMetrics: RequestMetrics,
  logger: Logger,
): ProduceStreams {
  return new PipelinedStreamServer({
    api: 'Produce',
    inFlightMax: produceStreamInFlightMax,
    handle: (request, call) => handleProduce(request, call.getPeer(), dependencies),
    failed: (request, error) => {
      const protoError = wireErrorOf(error);
      if (protoError.code === 'UNKNOWN_SERVER_ERROR') {
        logger.error({ err: error }, 'a produce on a produce stream failed');
      }
      return {
        results: request.partitions.map((partition) => failedResult(partition, protoError)),
      };
    },
    requestMetrics,
    logger,
  });
}

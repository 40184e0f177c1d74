/**
 * The storage node's side of AppendStream: Append requests pipelined on one long-lived gRPC
 * stream per gateway (storage.proto says why; PipelinedStreamServer in @spool/common says how:
 * each request runs as a unary Append would, concurrently, answered with its correlation id when
 * done, started in arrival order, bounded, counted and timed as an Append).
 *
 * stop() (at shutdown, once the leaderships have moved away) lets each stream finish the requests
 * it has started, answers them, and ends it; requests that arrive after stop() are not run. The
 * gateway fails what its ended stream left unanswered as SHUTTING_DOWN, which it routes again:
 * nothing was written for them.
 */
import { PipelinedStreamServer, type Logger, type RequestMetrics } from '@spool/common';
import type {
  AppendRequest,
  AppendResponse,
  AppendStreamRequest,
  AppendStreamResponse,
} from '@spool/protocol';

/** Requests of one stream running at once, at most. */
export const appendStreamInFlightMax = 256;

export type AppendStreams = PipelinedStreamServer<AppendStreamRequest, AppendStreamResponse>;

export function appendStreams(
  append: (request: AppendRequest) => Promise<AppendResponse>,
  requestMetrics: RequestMetrics,
  logger: Logger,
): AppendStreams {
  return new PipelinedStreamServer({
    api: 'Append',
    inFlightMax: appendStreamInFlightMax,
    handle: (request) => append(request),
    // Append answers every partition on its own; a throw here is a bug.
    failed: (_request, error) => {
      logger.error({ err: error }, 'an append on an append stream failed');
      return { results: [] };
    },
    requestMetrics,
    logger,
  });
}

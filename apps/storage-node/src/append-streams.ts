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
import type { ServerDuplexStream } from '@grpc/grpc-js';
import { PipelinedStreamServer, type Logger, type RequestMetrics } from '@spool/common';
import type {
  AppendRequest,
  AppendResponse,
  AppendStreamRequest,
  AppendStreamResponse,
} from '@spool/protocol';

/** Requests of one stream running at once, at most. */
export const appendStreamInFlightMax = 256;

export class AppendStreams {
  private readonly server: PipelinedStreamServer<AppendStreamRequest, AppendStreamResponse>;

  constructor(
    append: (request: AppendRequest) => Promise<AppendResponse>,
    requestMetrics: RequestMetrics,
    logger: Logger,
  ) {
    this.server = new PipelinedStreamServer({
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

  get openCount(): number {
    return this.server.openCount;
  }

  /** Serves one stream; resolves when it is done (the gateway ended it, or stop()). */
  serve(call: ServerDuplexStream<AppendStreamRequest, AppendStreamResponse>): Promise<void> {
    return this.server.serve(call);
  }

  stop(): void {
    this.server.stop();
  }
}

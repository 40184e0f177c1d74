/**
 * The storage node's side of AppendStream: Append requests pipelined on one long-lived gRPC
 * stream per gateway (storage.proto says why). Each request runs as a unary Append would, at
 * once and concurrently with the others, and is answered with its correlation id when done, so
 * an acks=all wait holds back nothing behind it. Requests start in arrival order (a partition's
 * batches reach its log in the order they were sent, as on one Kafka connection).
 *
 * - Bounded: at most appendStreamInFlightMax requests of one stream run at once; beyond it the
 *   stream stops reading (HTTP/2 flow control then holds the sender) until half have finished.
 * - Every request counts and times as an Append in the request metrics, as a unary one does.
 * - stop() (at shutdown, once the leaderships have moved away) lets each stream finish the
 *   requests it has started, answers them, and ends it; requests that arrive after stop() are
 *   not run. The gateway fails what its ended stream left unanswered as SHUTTING_DOWN, which it
 *   routes again: nothing was written for them.
 */
import type { ServerDuplexStream } from '@grpc/grpc-js';
import type { Logger, RequestMetrics } from '@spool/common';
import type {
  AppendRequest,
  AppendResponse,
  AppendStreamRequest,
  AppendStreamResponse,
} from '@spool/protocol';

/** Requests of one stream running at once, at most. */
export const appendStreamInFlightMax = 256;

export class AppendStreams {
  private readonly open = new Set<() => void>();
  private stopping = false;

  constructor(
    private readonly append: (request: AppendRequest) => Promise<AppendResponse>,
    private readonly requestMetrics: RequestMetrics,
    private readonly logger: Logger,
  ) {}

  get openCount(): number {
    return this.open.size;
  }

  /** Serves one stream; resolves when it is done (the gateway ended it, or stop()). */
  serve(call: ServerDuplexStream<AppendStreamRequest, AppendStreamResponse>): Promise<void> {
    return new Promise((resolve) => {
      let inFlight = 0;
      let reading = true;
      let paused = false;
      const finish = (): void => {
        if (reading || inFlight > 0) return;
        this.open.delete(stopReading);
        resolve();
      };
      const stopReading = (): void => {
        reading = false;
        call.pause();
        finish();
      };
      this.open.add(stopReading);
      call.on('data', (request: AppendStreamRequest) => {
        if (!reading) return;
        inFlight += 1;
        if (inFlight >= appendStreamInFlightMax && !paused) {
          paused = true;
          call.pause();
        }
        const end = this.requestMetrics.begin('Append', { timed: true });
        this.append(request)
          .then(
            (response) => {
              end({ response });
              if (!call.cancelled) {
                call.write({ correlationId: request.correlationId, results: response.results });
              }
            },
            (error: unknown) => {
              // Append answers every partition on its own; a throw here is a bug.
              end({ error });
              this.logger.error({ err: error }, 'an append on an append stream failed');
              if (!call.cancelled)
                call.write({ correlationId: request.correlationId, results: [] });
            },
          )
          .finally(() => {
            inFlight -= 1;
            if (paused && reading && inFlight <= appendStreamInFlightMax / 2) {
              paused = false;
              call.resume();
            }
            finish();
          });
      });
      // The gateway ended its side, or the call broke (cancelled, connection lost).
      call.on('end', stopReading);
      call.on('error', stopReading);
      call.on('cancelled', stopReading);
      if (this.stopping) stopReading();
    });
  }

  stop(): void {
    this.stopping = true;
    for (const stopReading of [...this.open]) stopReading();
  }
}

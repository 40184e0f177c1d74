/**
 * The serving side of a pipelined gRPC stream (stream-pipeline.ts is the calling side): requests
 * arrive as messages on one long-lived bidi stream per caller; each runs as its unary call would,
 * at once and concurrently with the others, and is answered with its correlation id when done,
 * so a slow request (an acks=all wait) holds back nothing behind it. Requests start in arrival
 * order, so a partition's batches reach its log in the order they were sent, as on one Kafka
 * connection. Serves the storage node's AppendStream and the gateway's ProduceStream.
 *
 * - Bounded: at most `inFlightMax` requests of one stream run at once; beyond it the stream stops
 *   reading (HTTP/2 flow control then holds the sender) until half have finished.
 * - Every request counts and times under `api` in the request metrics, as a unary one does, so
 *   one query covers both ways of calling.
 * - A request whose handler throws is answered with `failed(request, error)`: the caller is
 *   answered either way, and the stream goes on. A failed assertion stops the process instead.
 * - stop() (at shutdown) lets each stream finish the requests it has started, answers them, and
 *   ends it; requests that arrive after stop() are not run. The caller fails what the ended
 *   stream left unanswered retriably, and sends it again: none of it was started.
 */
import type { ServerDuplexStream } from '@grpc/grpc-js';
import { exitOnAssertionFailure } from './assertion-failure';
import type { Logger } from './logger';
import type { RequestMetrics } from './request-metrics';
import type { Correlated } from './stream-pipeline';

/**
 * Request and Response are the stream's messages, correlation id included; `handle` and `failed`
 * answer without it.
 */
export interface PipelinedStreamServerOptions<
  Request extends Correlated,
  Response extends Correlated,
> {
  /** The request metrics' API name of one request: "Append", "Produce". */
  readonly api: string;
  readonly inFlightMax: number;
  readonly handle: (
    request: Request,
    call: ServerDuplexStream<Request, Response>,
  ) => Promise<Omit<Response, 'correlationId'>>;
  /** The answer to a request whose handler threw. */
  readonly failed: (request: Request, error: unknown) => Omit<Response, 'correlationId'>;
  readonly requestMetrics: RequestMetrics;
  readonly logger: Logger;
}

export class PipelinedStreamServer<Request extends Correlated, Response extends Correlated> {
  private readonly open = new Set<() => void>();
  private stopping = false;

  constructor(private readonly options: PipelinedStreamServerOptions<Request, Response>) {}

  get openCount(): number {
    return this.open.size;
  }

  /** Serves one stream; resolves when it is done (the caller ended it, or stop()). */
  serve(call: ServerDuplexStream<Request, Response>): Promise<void> {
    const { api, inFlightMax, handle, failed, requestMetrics } = this.options;
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
      const answer = (request: Request, response: Omit<Response, 'correlationId'>): void => {
        if (!call.cancelled) {
          call.write({ ...response, correlationId: request.correlationId } as Response);
        }
      };
      call.on('data', (request: Request) => {
        if (!reading) return;
        inFlight += 1;
        if (inFlight >= inFlightMax && !paused) {
          paused = true;
          call.pause();
        }
        const end = requestMetrics.begin(api, { timed: true });
        let running: Promise<Omit<Response, 'correlationId'>>;
        try {
          running = handle(request, call);
        } catch (error) {
          running = Promise.reject(error);
        }
        running
          .then(
            (response) => {
              end({ response });
              answer(request, response);
            },
            (error: unknown) => {
              end({ error });
              exitOnAssertionFailure(error, this.options.logger, { api });
              answer(request, failed(request, error));
            },
          )
          .finally(() => {
            inFlight -= 1;
            if (paused && reading && inFlight <= inFlightMax / 2) {
              paused = false;
              call.resume();
            }
            finish();
          });
      });
      // The caller ended its side, or the call broke (cancelled, connection lost).
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

/**
 * The gateway's side of AppendStream (storage.proto): one long-lived stream to a leader, on
 * which every produce the gateway forwards to that leader is one message tagged with a
 * correlation id, as requests share one connection to a Kafka broker. A unary Append paid an
 * HTTP/2 stream, headers, trailers and a deadline timer every time: about 0.3 ms of CPU on each
 * side, which at 16 KiB batches was most of the gateway's cost per request.
 *
 * - The stream opens on first use and again after it ends or breaks.
 * - Each request has its own deadline; past it, it fails REQUEST_TIMED_OUT (retriable) and a
 *   late answer is dropped.
 * - A stream that breaks (the leader died, the connection dropped) fails every request still
 *   waiting with NETWORK_EXCEPTION, and one the leader ended (it is shutting down, after
 *   answering all it had started) with SHUTTING_DOWN: both are retriable, so the produce is
 *   routed again, as after a unary call's connection error.
 * - Bounded: at most appendPipelineInFlightMax requests wait on one stream; more fail
 *   IN_FLIGHT_REQUESTS_FULL (retriable). The gateway's produce admission bounds the bytes.
 */
import type { ClientDuplexStream, ServiceError } from '@grpc/grpc-js';
import { SpoolError, fromGrpcError } from '@spool/common';
import type {
  AppendRequest,
  AppendResponse,
  AppendStreamRequest,
  AppendStreamResponse,
  StorageServiceClient,
} from '@spool/protocol';

export const appendPipelineInFlightMax = 4_096;

interface Waiting {
  readonly resolve: (response: AppendResponse) => void;
  readonly reject: (error: SpoolError) => void;
  readonly timer: NodeJS.Timeout;
}

export class AppendPipeline {
  private stream: ClientDuplexStream<AppendStreamRequest, AppendStreamResponse> | undefined;
  private readonly waiting = new Map<number, Waiting>();
  private nextCorrelationId = 1;
  private closed = false;

  constructor(
    private readonly client: StorageServiceClient,
    private readonly leaderName: string,
  ) {}

  get waitingCount(): number {
    return this.waiting.size;
  }

  /** Sends one Append on the stream; resolves with the leader's answer. */
  append(request: AppendRequest, timeoutMs: number): Promise<AppendResponse> {
    if (this.closed) {
      return Promise.reject(
        new SpoolError('SHUTTING_DOWN', 'the gateway is shutting down', { retriable: true }),
      );
    }
    if (this.waiting.size >= appendPipelineInFlightMax) {
      return Promise.reject(
        new SpoolError(
          'IN_FLIGHT_REQUESTS_FULL',
          `${appendPipelineInFlightMax} appends already wait on ${this.leaderName}`,
          { retriable: true },
        ),
      );
    }
    const stream = this.stream ?? this.open();
    const correlationId = this.nextCorrelationId;
    // Wraps within uint32, skipping 0 (proto3 leaves a 0 off the wire).
    this.nextCorrelationId = (this.nextCorrelationId % 0xffffffff) + 1;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(correlationId);
        reject(
          new SpoolError(
            'REQUEST_TIMED_OUT',
            `${this.leaderName} did not answer an append within ${timeoutMs} ms`,
            { retriable: true },
          ),
        );
      }, timeoutMs);
      this.waiting.set(correlationId, { resolve, reject, timer });
      stream.write({ ...request, correlationId });
    });
  }

  /** Cancels the stream; what still waits fails SHUTTING_DOWN. */
  close(): void {
    this.closed = true;
    const stream = this.stream;
    this.failWaiting(
      stream,
      new SpoolError('SHUTTING_DOWN', 'the gateway is shutting down', { retriable: true }),
    );
    stream?.cancel();
  }

  private open(): ClientDuplexStream<AppendStreamRequest, AppendStreamResponse> {
    const stream = this.client.appendStream();
    this.stream = stream;
    stream.on('data', (response: AppendStreamResponse) => {
      const waiting = this.waiting.get(response.correlationId);
      if (waiting === undefined) return; // Timed out already.
      this.waiting.delete(response.correlationId);
      clearTimeout(waiting.timer);
      waiting.resolve({ results: response.results });
    });
    stream.on('error', (error: ServiceError) => {
      const cause = fromGrpcError(error);
      this.failWaiting(
        stream,
        new SpoolError(
          'NETWORK_EXCEPTION',
          `the append stream to ${this.leaderName} broke: ${cause.code}: ${cause.message}`,
          { retriable: true, cause },
        ),
      );
    });
    stream.on('end', () =>
      this.failWaiting(
        stream,
        new SpoolError(
          'SHUTTING_DOWN',
          `${this.leaderName} ended its append stream (it is shutting down)`,
          { retriable: true },
        ),
      ),
    );
    return stream;
  }

  /** The stream is done: later appends open a new one; everything waiting on it fails. */
  private failWaiting(
    stream: ClientDuplexStream<AppendStreamRequest, AppendStreamResponse> | undefined,
    error: SpoolError,
  ): void {
    if (stream === undefined || this.stream !== stream) return;
    this.stream = undefined;
    for (const waiting of this.waiting.values()) {
      clearTimeout(waiting.timer);
      waiting.reject(error);
    }
    this.waiting.clear();
  }
}

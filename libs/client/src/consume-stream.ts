import type * as grpc from '@grpc/grpc-js';
import { fromGrpcError, type SpoolError } from '@spool/common';
import type { ConsumeRequest, ConsumeResponse, FetchPartition } from '@spool/protocol';
import type { GatewayConnection } from './gateway-connection';

/**
 * One Consume call on the gateway: the first message names the partitions and their fetch
 * offsets with an initial credit, later messages only add credit. Credit is counted in record
 * bytes (the `records` of each FetchedPartition): the gateway sends while it has credit, the
 * consumer grants bytes back as the application finishes with them, so a slow handler stops the
 * flow instead of filling memory. The set of partitions cannot change on a stream; a seek, pause
 * or resume closes it and opens another (`generation` tells their events apart).
 *
 * If the gateway ever sends far past the credit, reading pauses (HTTP/2 flow control then holds
 * the rest on the gateway) until the consumer has caught up.
 */

export type ConsumeStreamEvent =
  | { readonly kind: 'response'; readonly generation: number; readonly response: ConsumeResponse }
  | { readonly kind: 'error'; readonly generation: number; readonly error: SpoolError }
  | { readonly kind: 'end'; readonly generation: number };

/** Received-but-unconsumed bytes beyond this many windows pause reading: a gateway bug guard. */
const overrunWindows = 2;
/**
 * How long a closed stream may take to end on the gateway's side before it is cancelled. The
 * gateway ends a stream as soon as the consumer half-closes it, so this only bounds a gateway
 * that is stuck or gone.
 */
export const consumeStreamCloseGraceMs = 5_000;

export class ConsumeStream {
  private readonly call: grpc.ClientDuplexStream<ConsumeRequest, ConsumeResponse>;
  private closed = false;
  /** The call is over on the gateway's side (an error or the end): no more writes. */
  private finished = false;
  private outstandingBytes = 0;
  private readingPaused = false;
  /** Credit granted on this stream in all, the initial grant included. */
  grantedBytes = 0;
  /** Cancels a closed stream that the gateway has not ended (consumeStreamCloseGraceMs). */
  private closeGraceTimer: NodeJS.Timeout | undefined;
  /** The gateway the stream is on (GatewayConnection.gatewayIndex), for its fail-over. */
  readonly gatewayIndex: number;

  constructor(
    connection: GatewayConnection,
    readonly generation: number,
    partitions: readonly FetchPartition[],
    private readonly windowBytes: number,
    onEvent: (event: ConsumeStreamEvent) => void,
    private readonly closeGraceMs = consumeStreamCloseGraceMs,
  ) {
    this.gatewayIndex = connection.gatewayIndex;
    this.call = connection.openConsumeStream();
    this.call.on('data', (response: ConsumeResponse) => {
      if (this.closed) return;
      for (const partition of response.partitions)
        this.outstandingBytes += partition.records.length;
      if (this.outstandingBytes > overrunWindows * this.windowBytes && !this.readingPaused) {
        this.readingPaused = true;
        this.call.pause();
      }
      onEvent({ kind: 'response', generation, response });
    });
    this.call.on('error', (error: grpc.ServiceError) => {
      this.onFinished();
      if (!this.closed) onEvent({ kind: 'error', generation, error: fromGrpcError(error) });
    });
    this.call.on('end', () => {
      this.onFinished();
      if (!this.closed) onEvent({ kind: 'end', generation });
    });
    this.grantedBytes = windowBytes;
    this.call.write({ partitions: [...partitions], creditBytes: BigInt(windowBytes) });
  }

  /** Hands `bytes` of credit back to the gateway once the application is done with them. */
  grant(bytes: number): void {
    if (this.closed || this.finished || bytes <= 0) return;
    this.outstandingBytes -= bytes;
    this.grantedBytes += bytes;
    this.call.write({ partitions: [], creditBytes: BigInt(bytes) });
    if (this.readingPaused && this.outstandingBytes <= this.windowBytes) {
      this.readingPaused = false;
      this.call.resume();
    }
  }

  /**
   * Stops the stream: half-closes it, and the gateway ends it (as Kafka's consumer moves its fetch
   * position without dropping the connection). Cancelling would send an RST_STREAM, and HTTP/2
   * servers bound how fast a client may reset streams (nghttp2's rapid-reset limit: a burst of
   * 1,000, then 33 a second): a consumer that seeks a few hundred times a second had its whole
   * connection closed with GOAWAY after about 1,000 seeks. What arrives after the close is
   * dropped; reading resumes so the gateway's last writes drain and the stream can finish. A
   * stream still open `closeGraceMs` later (consumeStreamCloseGraceMs) is cancelled.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.finished) return;
    this.call.end();
    if (this.readingPaused) {
      this.readingPaused = false;
      this.call.resume();
    }
    this.closeGraceTimer = setTimeout(() => this.call.cancel(), this.closeGraceMs);
    this.closeGraceTimer.unref();
  }

  private onFinished(): void {
    this.finished = true;
    clearTimeout(this.closeGraceTimer);
  }
}

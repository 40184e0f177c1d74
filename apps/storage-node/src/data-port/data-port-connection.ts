// One accepted connection of the data port: cuts its bytes into request frames, serves them one
// at a time in arrival order, and closes it when it is malformed, idle, gone, or the server stops.
//
// 1. Reading. Frames are taken out of the splitter only while fewer than
//    inFlightRequestsPerConnectionMax requests are queued or being served; at the bound the
//    socket is paused, so a pipelining peer is held back by TCP rather than buffered here. What
//    remains of the last chunk stays in the splitter until a slot frees.
// 2. Serving, strictly in order, one response at a time: writeTo's contract (nothing else writes
//    to the socket while a slice moves) and the client's (responses in request order) both need
//    it. A handler failure is answered with its error code in every requested partition.
// 3. A frame that cannot be served (malformed, oversized, unknown apiKey or version) stops all
//    reading; the requests before it are still answered, then an ERROR frame, then the
//    connection ends (a FIN after the last byte, not a reset). Other connections go on.
// 4. Closing (peer gone, idle for connectionsMaxIdleMs, a failed write) aborts the signal given
//    to the handler in flight; what it resolves with afterwards is released unsent.
// 5. Draining (the server stops): no new frames or responses; the handler in flight is aborted;
//    a response already on the wire is finished, then the connection ends as in point 3. The
//    server destroys what is left after its drain timeout.
// 6. Every FetchResult is released exactly once, whichever of these paths it takes.
import { exitOnAssertionFailure, isCodedError, type Logger } from '@spool/common';
import {
  DataPortApiKey,
  dataPortApiNames,
  type DataPortFetchRequest,
  type DataPortOffsetForLeaderEpochRequest,
  type DataPortOffsetForLeaderEpochResponse,
  type DataPortRequest,
  dataPortRequestBytesMax,
  dataPortSupportedApiVersions,
  decodeDataPortRequest,
  decodeDataPortRequestHeader,
  encodeApiVersionsResponse,
  encodeErrorResponse,
  encodeOffsetForLeaderEpochResponse,
  FrameSplitter,
  ProtocolError,
  requestHeaderBytes,
  unknownCorrelationId,
} from '@spool/protocol';
import type net from 'node:net';
import {
  type ErrorAnswer,
  errorAnswerOf,
  fetchErrorResult,
  offsetForLeaderEpochErrorResponse,
} from './data-port-error-answers';
import type { DataPortHandlers, FetchResult } from './data-port-handlers';
import { type DataPortMetrics, invalidRequestApiLabel } from './data-port-metrics';
import {
  type PartitionSentCallback,
  sendFetchResponse,
  writeFrame,
} from './data-port-response-writer';

/**
 * After the last response of a connection we end (ERROR frame, shutdown), how long the peer has
 * to read it and close its side before the socket is destroyed.
 */
const closeLingerMs = 5_000;

export const DataPortConnectionState = {
  /** Reading and serving. */
  Open: 'open',
  /** A frame was refused: serving what came before it, then the ERROR frame (point 3). */
  Refusing: 'refusing',
  /** The server stops: finishing the response on the wire, if any (point 5). */
  Draining: 'draining',
  /** The socket is being destroyed or ended; nothing more is served. */
  Closing: 'closing',
  /** The socket closed and nothing is being served: the connection is finished. */
  Closed: 'closed',
} as const;

export type DataPortConnectionState =
  (typeof DataPortConnectionState)[keyof typeof DataPortConnectionState];

type QueuedFrame =
  | { readonly kind: 'request'; readonly request: DataPortRequest }
  | { readonly kind: 'refusal'; readonly correlationId: number; readonly error: ProtocolError };

export interface DataPortConnectionOptions {
  readonly logger: Logger;
  readonly handlers: DataPortHandlers;
  readonly metrics: DataPortMetrics;
  readonly onPartitionSent: PartitionSentCallback;
  readonly inFlightRequestsMax: number;
  readonly connectionsMaxIdleMs: number;
}

export class DataPortConnection {
  /** Resolves once the socket closed. */
  readonly socketClosed: Promise<void>;
  /** Resolves once the socket closed and no request is being served. */
  readonly finished: Promise<void>;
  private stateValue: DataPortConnectionState = DataPortConnectionState.Open;
  private readonly splitter = new FrameSplitter({
    direction: 'request',
    frameBytesMax: () => dataPortRequestBytesMax,
    headerBytesMin: requestHeaderBytes,
  });
  private readonly queue: QueuedFrame[] = [];
  private readonly abortController = new AbortController();
  private readonly logger: Logger;
  private serving = false;
  /** True while a response is on the wire: it must be finished or the socket destroyed. */
  private writing = false;
  private isSocketClosed = false;
  private idleTimer: NodeJS.Timeout | undefined;
  private resolveFinished: () => void = () => undefined;

  constructor(
    private readonly socket: net.Socket,
    private readonly options: DataPortConnectionOptions,
  ) {
    this.logger = options.logger.child({
      peer: `${socket.remoteAddress}:${socket.remotePort}`,
    });
    this.finished = new Promise((resolve) => {
      this.resolveFinished = resolve;
    });
    this.socketClosed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('end', () => this.close('the peer ended the connection'));
    socket.on('error', (error) => this.logger.debug({ err: error }, 'data port socket error'));
    socket.on('close', () => {
      this.isSocketClosed = true;
      this.close('the socket closed');
      this.maybeFinish();
    });
    this.startIdleTimer();
  }

  get state(): DataPortConnectionState {
    return this.stateValue;
  }

  /** Point 5: stop taking work, finish the response on the wire, then close. */
  drain(): void {
    if (
      !this.transitionTo(
        [DataPortConnectionState.Open, DataPortConnectionState.Refusing],
        DataPortConnectionState.Draining,
      )
    ) {
      return;
    }
    this.socket.pause();
    this.clearIdleTimer();
    this.queue.length = 0;
    this.abortController.abort(new Error('the data port is shutting down'));
    if (!this.writing) this.endGracefully('the data port is shutting down');
  }

  /**
   * Point 4: abort the handler in flight and destroy the socket now. Also cuts short a
   * graceful end that is still waiting for the peer.
   */
  close(reason: string): void {
    const openStates = [
      DataPortConnectionState.Open,
      DataPortConnectionState.Refusing,
      DataPortConnectionState.Draining,
    ];
    if (this.transitionTo(openStates, DataPortConnectionState.Closing, reason)) {
      this.clearIdleTimer();
      this.queue.length = 0;
      this.abortController.abort(new Error(`the data port connection closed: ${reason}`));
    }
    if (this.stateValue === DataPortConnectionState.Closing) this.socket.destroy();
  }

  /**
   * Points 3 and 5: end the connection after the responses written so far. end() sends them
   * and a FIN; reading on (and discarding) keeps unread request bytes from turning the close
   * into a reset that could overtake the last response. The peer gets closeLingerMs to close.
   */
  private endGracefully(reason: string): void {
    const endingStates = [DataPortConnectionState.Refusing, DataPortConnectionState.Draining];
    if (!this.transitionTo(endingStates, DataPortConnectionState.Closing, reason)) return;
    this.clearIdleTimer();
    this.queue.length = 0;
    this.abortController.abort(new Error(`the data port connection ends: ${reason}`));
    this.socket.end();
    this.socket.resume();
    setTimeout(() => this.socket.destroy(), closeLingerMs).unref();
  }

  private onData(chunk: Buffer): void {
    // Bytes after a refused frame, or while draining or closing, are not read (points 3 and 5).
    if (this.stateValue !== DataPortConnectionState.Open) return;
    this.splitter.push(chunk);
    this.takeFrames();
    // Idle means nothing in flight and no bytes for connectionsMaxIdleMs; a partial frame counts.
    if (this.requestsInFlight() === 0) this.startIdleTimer();
    else this.clearIdleTimer();
    void this.serveQueue();
  }

  /** Point 1: moves complete frames into the queue while it has room, then sets the flow. */
  private takeFrames(): void {
    while (
      this.stateValue === DataPortConnectionState.Open &&
      this.requestsInFlight() < this.options.inFlightRequestsMax
    ) {
      const queued = this.nextFrame();
      if (queued === undefined) break;
      this.queue.push(queued);
      if (queued.kind === 'refusal') {
        this.options.metrics.requestReceived(invalidRequestApiLabel);
        this.transitionTo([DataPortConnectionState.Open], DataPortConnectionState.Refusing);
      } else {
        this.options.metrics.requestReceived(dataPortApiNames[queued.request.apiKey]);
      }
    }
    const room = this.requestsInFlight() < this.options.inFlightRequestsMax;
    if (this.stateValue === DataPortConnectionState.Open && room) this.socket.resume();
    else this.socket.pause();
  }

  /** The next frame as a request or as a refusal (point 3); undefined until one is complete. */
  private nextFrame(): QueuedFrame | undefined {
    let frame: Buffer | undefined;
    try {
      frame = this.splitter.next();
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      return { kind: 'refusal', correlationId: unknownCorrelationId, error };
    }
    if (frame === undefined) return undefined;
    let correlationId = unknownCorrelationId;
    try {
      correlationId = decodeDataPortRequestHeader(frame).correlationId;
      return { kind: 'request', request: decodeDataPortRequest(frame) };
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      return { kind: 'refusal', correlationId, error };
    }
  }

  private requestsInFlight(): number {
    return this.queue.length + (this.serving ? 1 : 0);
  }

  /** Point 2: one loop per connection serves the queue in order. */
  private async serveQueue(): Promise<void> {
    if (this.serving) return;
    this.serving = true;
    try {
      for (;;) {
        if (!this.isAnswering()) break;
        const queued = this.queue.shift();
        if (queued === undefined) break;
        if (queued.kind === 'refusal') {
          await this.refuse(queued.correlationId, queued.error);
          break;
        }
        await this.serve(queued.request);
        // A slot is free: take frames left in the splitter, and read again if there is room.
        this.takeFrames();
      }
    } finally {
      this.serving = false;
    }
    if (this.stateValue === DataPortConnectionState.Draining) {
      this.endGracefully('the data port is shutting down');
    }
    if (this.stateValue === DataPortConnectionState.Open && this.queue.length === 0) {
      this.startIdleTimer();
    }
    this.maybeFinish();
  }

  /** Responses are started only while open or refusing (for the frames before the refused one). */
  private isAnswering(): boolean {
    return (
      this.stateValue === DataPortConnectionState.Open ||
      this.stateValue === DataPortConnectionState.Refusing
    );
  }

  private async serve(request: DataPortRequest): Promise<void> {
    switch (request.apiKey) {
      case DataPortApiKey.ApiVersions:
        await this.writeResponse(
          encodeApiVersionsResponse(request.correlationId, { apis: dataPortSupportedApiVersions }),
        );
        return;
      case DataPortApiKey.Fetch:
        await this.serveFetch(request.correlationId, request.body);
        return;
      case DataPortApiKey.OffsetForLeaderEpoch:
        await this.serveOffsetForLeaderEpoch(request.correlationId, request.body);
        return;
    }
  }

  private async serveFetch(correlationId: number, request: DataPortFetchRequest): Promise<void> {
    let result: FetchResult;
    try {
      result = await this.options.handlers.fetch(request, this.abortController.signal);
    } catch (error) {
      if (!this.isAnswering()) return;
      result = fetchErrorResult(request, this.handlerFailed('Fetch', correlationId, error));
    }
    // Point 6: from here on, whatever happens, the result is released once.
    try {
      if (!this.isAnswering()) return;
      this.writing = true;
      await sendFetchResponse(this.socket, correlationId, result, (topic, sizeBytes) => {
        this.options.metrics.recordBytesMoved(sizeBytes);
        this.options.onPartitionSent(topic, sizeBytes);
      });
    } catch (error) {
      this.writeFailed(correlationId, error);
    } finally {
      this.writing = false;
      result.release();
    }
  }

  private async serveOffsetForLeaderEpoch(
    correlationId: number,
    request: DataPortOffsetForLeaderEpochRequest,
  ): Promise<void> {
    let response: DataPortOffsetForLeaderEpochResponse;
    try {
      response = await this.options.handlers.offsetForLeaderEpoch(
        request,
        this.abortController.signal,
      );
    } catch (error) {
      if (!this.isAnswering()) return;
      const answer = this.handlerFailed('OffsetForLeaderEpoch', correlationId, error);
      response = offsetForLeaderEpochErrorResponse(request, answer);
    }
    if (!this.isAnswering()) return;
    await this.writeResponse(encodeOffsetForLeaderEpochResponse(correlationId, response));
  }

  /** Point 3: the ERROR frame, then end the connection. */
  private async refuse(correlationId: number, error: ProtocolError): Promise<void> {
    this.logger.warn(
      { errorCode: error.code, correlationId },
      `data port refused a frame and closes the connection: ${error.message}`,
    );
    await this.writeResponse(
      encodeErrorResponse(correlationId, { errorCode: error.code, errorMessage: error.message }),
    );
    this.endGracefully('a frame was refused');
  }

  private async writeResponse(frame: Buffer): Promise<void> {
    if (!this.isAnswering()) return;
    this.writing = true;
    try {
      await writeFrame(this.socket, frame);
    } catch (error) {
      this.writeFailed(undefined, error);
    } finally {
      this.writing = false;
    }
  }

  private handlerFailed(api: string, correlationId: number, error: unknown): ErrorAnswer {
    // A failed assertion is a bug: it stops the process, it does not become an error code.
    exitOnAssertionFailure(error, this.logger, { api, correlationId });
    const answer = errorAnswerOf(error);
    this.logger.warn({ err: error, api, correlationId }, 'data port handler failed');
    return answer;
  }

  /** A response could not be completed: the peer cannot find the next frame, so close. */
  private writeFailed(correlationId: number | undefined, error: unknown): void {
    if (!isCodedError(error)) throw error;
    const level = error.code === 'NETWORK_EXCEPTION' ? 'debug' : 'warn';
    this.logger[level]({ err: error, correlationId }, 'data port response failed');
    this.close(`a response failed: ${error.code}`);
  }

  private startIdleTimer(): void {
    this.clearIdleTimer();
    const idleMs = this.options.connectionsMaxIdleMs;
    this.idleTimer = setTimeout(() => this.close(`idle for ${idleMs} ms`), idleMs);
    this.idleTimer.unref();
  }

  private clearIdleTimer(): void {
    if (this.idleTimer === undefined) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  private maybeFinish(): void {
    if (!this.isSocketClosed || this.serving) return;
    if (this.stateValue === DataPortConnectionState.Closed) return;
    this.transitionTo([DataPortConnectionState.Closing], DataPortConnectionState.Closed);
    this.resolveFinished();
  }

  /** The one place the state changes; returns false (and changes nothing) from another state. */
  private transitionTo(
    allowedFrom: readonly DataPortConnectionState[],
    next: DataPortConnectionState,
    reason?: string,
  ): boolean {
    const previous = this.stateValue;
    if (!allowedFrom.includes(previous)) return false;
    this.stateValue = next;
    this.logger.debug({ from: previous, to: next, reason }, 'data port connection state');
    return true;
  }
}

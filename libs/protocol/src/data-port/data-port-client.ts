// The client of a storage node's data port (layout in data-port-layout.ts), used by followers for
// replica fetches and by the gateway for consumer fetches. One client is one TCP connection.
//
// 1. Requests are pipelined: each gets the next correlationId and is written at once, up to
//    inFlightRequestsMax unanswered; beyond that a call fails with IN_FLIGHT_REQUESTS_FULL
//    (retriable) rather than queue without a bound.
// 2. The server answers in the order it received the requests, so each response must carry the
//    oldest pending request's correlationId and apiKey; anything else means the stream is lost.
// 3. A response frame is bounded before a byte of its body is buffered, by what the oldest
//    pending request can legitimately get back (fetchResponseBytesMax for a fetch), and is read
//    whole into one buffer; record bytes are views into it.
// 4. A request that times out fails with REQUEST_TIMED_OUT and closes the connection: its
//    response may still come, and the position of later ones in the stream is then unknown.
// 5. Any failure of the connection (a socket error, the peer closing, a malformed or oversized
//    frame, an ERROR response) fails every pending request and closes the client for good: the
//    oldest request gets the cause, the others NETWORK_EXCEPTION. There is no reconnect; the
//    owner creates a new client.
import assert from 'node:assert/strict';
import net from 'node:net';
import * as tls from 'node:tls';
import { ProtocolError, ProtocolErrorCode } from '../errors';
import { type DataPortApiVersionsResponse, encodeApiVersionsRequest } from './api-versions-codec';
import {
  DataPortApiKey,
  dataPortApiNames,
  dataPortErrorApiKey,
  errorCodeBytesMax,
  errorMessageBytesMax,
  frameSizeFieldBytes,
  responseHeaderBytes,
} from './data-port-layout';
import { type DataPortResponse, decodeDataPortResponse } from './data-port-response';
import {
  type DataPortFetchRequest,
  type DataPortFetchResponse,
  encodeFetchRequest,
  fetchApiVersionOf,
  fetchResponseBytesMax,
} from './fetch-codec';
import { FrameSplitter } from './frame-splitter';
import {
  type DataPortOffsetForLeaderEpochRequest,
  type DataPortOffsetForLeaderEpochResponse,
  encodeOffsetForLeaderEpochRequest,
} from './offset-for-leader-epoch-codec';

/** Kafka's max.in.flight.requests.per.connection is 5; fetchers need one, the gateway a few. */
export const dataPortClientInFlightRequestsMaxDefault = 16;
/** A storage node that does not accept within 10 s is down or unreachable for this purpose. */
export const dataPortConnectTimeoutMsDefault = 10_000;

/** Correlation ids stay below 2^31, away from unknownCorrelationId (0xFFFFFFFF) of ERROR frames. */
const correlationIdMask = 0x7fffffff;

/** The largest ERROR response: what may arrive when nothing is pending. */
const errorResponseBytesMax =
  frameSizeFieldBytes + responseHeaderBytes + 2 + errorCodeBytesMax + 2 + errorMessageBytesMax;

export interface DataPortClientOptions {
  /** Requests sent and not yet answered; defaults to dataPortClientInFlightRequestsMaxDefault. */
  readonly inFlightRequestsMax?: number;
  /** Defaults to dataPortConnectTimeoutMsDefault. */
  readonly connectTimeoutMs?: number;
  /**
   * TLS to the data port (security.protocol=SSL): node:tls options such as the secure context
   * with this process's certificate; the server's certificate is checked against `host`.
   * Plaintext without it.
   */
  readonly tls?: tls.ConnectionOptions;
}

export interface DataPortRequestOptions {
  /** Milliseconds from the call until the response must have arrived, long poll included. */
  readonly timeoutMs: number;
}

export interface DataPortFetchOptions extends DataPortRequestOptions {
  /** Overrides fetchResponseBytesMax(request), the bound on the response frame. */
  readonly responseBytesMax?: number;
  /**
   * Partitions the request's fetch session holds beyond those the request names: the response
   * may answer for them too, and its bound grows with them. 0 if unset.
   */
  readonly sessionPartitionsMax?: number;
}

interface PendingRequest {
  readonly correlationId: number;
  readonly apiKey: DataPortApiKey;
  /** The request's version: a FETCH response's layout follows it. */
  readonly apiVersion: number;
  readonly responseBytesMax: number;
  readonly resolve: (response: DataPortResponse) => void;
  readonly reject: (error: ProtocolError) => void;
  readonly timer: NodeJS.Timeout;
}

export class DataPortClient {
  private readonly pending: PendingRequest[] = [];
  private readonly splitter: FrameSplitter;
  private readonly closed: Promise<void>;
  private nextCorrelationId = 0;
  /** Set once the connection failed or was closed: every later call fails with it. */
  private failure: ProtocolError | undefined;

  private constructor(
    private readonly socket: net.Socket,
    private readonly peer: string,
    private readonly inFlightRequestsMax: number,
  ) {
    this.splitter = new FrameSplitter({
      direction: 'response',
      frameBytesMax: () => this.pending[0]?.responseBytesMax ?? errorResponseBytesMax,
      headerBytesMin: responseHeaderBytes,
    });
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (error) => {
      this.fail(networkError(`The connection to the data port ${peer} failed`, error));
    });
    socket.on('close', () => {
      this.fail(networkError(`The data port ${peer} closed the connection`));
    });
  }

  /** Opens a connection; rejects with NETWORK_EXCEPTION when it cannot within the timeout. */
  static connect(
    host: string,
    port: number,
    options: DataPortClientOptions = {},
  ): Promise<DataPortClient> {
    const inFlightRequestsMax =
      options.inFlightRequestsMax ?? dataPortClientInFlightRequestsMaxDefault;
    const connectTimeoutMs = options.connectTimeoutMs ?? dataPortConnectTimeoutMsDefault;
    assert.ok(Number.isInteger(inFlightRequestsMax), 'inFlightRequestsMax must be an integer');
    assert.ok(inFlightRequestsMax >= 1, 'inFlightRequestsMax must be at least 1');
    assert.ok(Number.isInteger(connectTimeoutMs), 'connectTimeoutMs must be an integer');
    assert.ok(connectTimeoutMs >= 1, 'connectTimeoutMs must be at least 1');
    const peer = `${host}:${port}`;
    return new Promise((resolve, reject) => {
      const socket =
        options.tls === undefined
          ? net.connect({ host, port })
          : tls.connect({ ...options.tls, host, port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(
          networkError(`Connecting to the data port ${peer} took over ${connectTimeoutMs} ms`),
        );
      }, connectTimeoutMs);
      const onError = (error: Error): void => {
        clearTimeout(timer);
        socket.destroy();
        reject(networkError(`Cannot connect to the data port ${peer}`, error));
      };
      socket.once('error', onError);
      socket.once(options.tls === undefined ? 'connect' : 'secureConnect', () => {
        clearTimeout(timer);
        socket.off('error', onError);
        resolve(new DataPortClient(socket, peer, inFlightRequestsMax));
      });
    });
  }

  /** Requests sent and not yet answered. */
  get inFlightRequestCount(): number {
    return this.pending.length;
  }

  /** True once the connection failed or was closed; the client is then useless. */
  get isClosed(): boolean {
    return this.failure !== undefined;
  }

  async fetch(
    request: DataPortFetchRequest,
    options: DataPortFetchOptions,
  ): Promise<DataPortFetchResponse> {
    const response = await this.send(
      DataPortApiKey.Fetch,
      (correlationId) => encodeFetchRequest(correlationId, request),
      options.responseBytesMax ?? fetchResponseBytesMax(request, options.sessionPartitionsMax),
      options.timeoutMs,
      fetchApiVersionOf(request),
    );
    assert.ok(response.apiKey === DataPortApiKey.Fetch, 'send matched the apiKey');
    return response.body;
  }

  async offsetForLeaderEpoch(
    request: DataPortOffsetForLeaderEpochRequest,
    options: DataPortRequestOptions,
  ): Promise<DataPortOffsetForLeaderEpochResponse> {
    // Every partition answered with its longest error, plus the frame and array headers.
    let responseBytesMax = frameSizeFieldBytes + responseHeaderBytes + 4;
    for (const partition of request.partitions) {
      responseBytesMax +=
        2 + Buffer.byteLength(partition.topic, 'utf8') + 4 + 2 + errorCodeBytesMax;
      responseBytesMax += 2 + errorMessageBytesMax + 4 + 8;
    }
    const response = await this.send(
      DataPortApiKey.OffsetForLeaderEpoch,
      (correlationId) => encodeOffsetForLeaderEpochRequest(correlationId, request),
      Math.max(responseBytesMax, errorResponseBytesMax),
      options.timeoutMs,
    );
    assert.ok(response.apiKey === DataPortApiKey.OffsetForLeaderEpoch, 'send matched the apiKey');
    return response.body;
  }

  async apiVersions(options: DataPortRequestOptions): Promise<DataPortApiVersionsResponse> {
    // Every apiKey of the u16 space, 6 bytes each: a generous bound on a tiny answer.
    const responseBytesMax = frameSizeFieldBytes + responseHeaderBytes + 4 + 6 * 0x10000;
    const response = await this.send(
      DataPortApiKey.ApiVersions,
      (correlationId) => encodeApiVersionsRequest(correlationId),
      responseBytesMax,
      options.timeoutMs,
    );
    assert.ok(response.apiKey === DataPortApiKey.ApiVersions, 'send matched the apiKey');
    return response.body;
  }

  /** Closes the connection; pending requests fail with NETWORK_EXCEPTION. Resolves once closed. */
  close(): Promise<void> {
    this.fail(networkError(`The client closed its connection to the data port ${this.peer}`));
    return this.closed;
  }

  private send(
    apiKey: DataPortApiKey,
    encode: (correlationId: number) => Buffer,
    responseBytesMax: number,
    timeoutMs: number,
    apiVersion = 0,
  ): Promise<DataPortResponse> {
    assert.ok(Number.isInteger(timeoutMs), 'timeoutMs must be an integer');
    assert.ok(timeoutMs >= 1, 'timeoutMs must be at least 1');
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.pending.length >= this.inFlightRequestsMax) {
      return Promise.reject(
        new ProtocolError(
          ProtocolErrorCode.InFlightRequestsFull,
          `${this.pending.length} requests are already in flight to the data port ` +
            `${this.peer} (inFlightRequestsMax = ${this.inFlightRequestsMax})`,
        ),
      );
    }
    const correlationId = this.nextCorrelationId;
    // Encoding throws a RangeError for a field out of range: the caller's bug, before any write.
    const frame = encode(correlationId);
    this.nextCorrelationId = (correlationId + 1) & correlationIdMask;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.onTimeout(correlationId, timeoutMs), timeoutMs);
      this.pending.push({
        correlationId,
        apiKey,
        apiVersion,
        responseBytesMax,
        resolve,
        reject,
        timer,
      });
      this.socket.write(frame);
    });
  }

  private onTimeout(correlationId: number, timeoutMs: number): void {
    const index = this.pending.findIndex((request) => request.correlationId === correlationId);
    if (index === -1) return;
    const [timedOut] = this.pending.splice(index, 1);
    timedOut.reject(
      new ProtocolError(
        ProtocolErrorCode.RequestTimedOut,
        `No response from the data port ${this.peer} to ${dataPortApiNames[timedOut.apiKey]} ` +
          `(correlationId ${correlationId}) within ${timeoutMs} ms`,
      ),
    );
    // Point 4: its response may still arrive, and would be taken for the next one's.
    this.fail(
      networkError(
        `The connection to the data port ${this.peer} was closed after request ` +
          `${correlationId} timed out`,
      ),
    );
  }

  private onData(chunk: Buffer): void {
    this.splitter.push(chunk);
    try {
      for (;;) {
        if (this.failure !== undefined) return;
        const frame = this.splitter.next();
        if (frame === undefined) return;
        this.onFrame(frame);
      }
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      this.fail(error);
    }
  }

  private onFrame(frame: Buffer): void {
    const head = this.pending[0];
    if (head === undefined) {
      throw new ProtocolError(
        ProtocolErrorCode.CorruptMessage,
        `The data port ${this.peer} sent a response frame of ${frame.length} bytes while no ` +
          'request was pending',
      );
    }
    const response = decodeDataPortResponse(frame, head.apiVersion);
    if (response.apiKey === dataPortErrorApiKey) {
      this.fail(serverRefusal(response.body.errorCode, response.body.errorMessage, this.peer));
      return;
    }
    if (response.correlationId !== head.correlationId || response.apiKey !== head.apiKey) {
      throw new ProtocolError(
        ProtocolErrorCode.CorruptMessage,
        `The data port ${this.peer} answered apiKey ${response.apiKey} correlationId ` +
          `${response.correlationId}, but the oldest pending request is ` +
          `${dataPortApiNames[head.apiKey]} correlationId ${head.correlationId}`,
      );
    }
    this.pending.shift();
    clearTimeout(head.timer);
    head.resolve(response);
  }

  /**
   * Point 5: closes for good. The oldest pending request gets `cause`, the others a
   * NETWORK_EXCEPTION that names it. Later calls do nothing.
   */
  private fail(cause: ProtocolError): void {
    if (this.failure !== undefined) return;
    this.failure = networkError(
      `The connection to the data port ${this.peer} is closed: ${cause.message}`,
      cause,
    );
    const failed = this.pending.splice(0, this.pending.length);
    failed.forEach((request, index) => {
      clearTimeout(request.timer);
      request.reject(index === 0 ? cause : (this.failure as ProtocolError));
    });
    this.socket.destroy();
  }
}

function networkError(message: string, cause?: unknown): ProtocolError {
  return new ProtocolError(
    ProtocolErrorCode.NetworkException,
    message,
    cause === undefined ? {} : { cause },
  );
}

/** An ERROR response as a typed error: the server's code when it is one of ours. */
function serverRefusal(errorCode: string, errorMessage: string, peer: string): ProtocolError {
  const knownCodes: readonly string[] = Object.values(ProtocolErrorCode);
  const code = knownCodes.includes(errorCode)
    ? (errorCode as ProtocolErrorCode)
    : ProtocolErrorCode.InvalidRequest;
  return new ProtocolError(
    code,
    `The data port ${peer} refused the request with ${errorCode || 'no code'}: ${errorMessage}`,
  );
}

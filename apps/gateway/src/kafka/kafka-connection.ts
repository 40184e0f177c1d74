// One accepted connection of the Kafka listener: cuts its bytes into request frames, starts each
// request as soon as it is complete, and writes the responses in request order, as a Kafka broker
// answers one connection.
//
// 1. Framing. Each request is an int32 size and that many bytes; a size over
//    socket.request.max.bytes (a 2 GiB prefix included) or under the 8-byte fixed header ends
//    the connection before anything is allocated for it (FrameSplitter).
// 2. Pipelining. A request is handed to the handler in arrival order and synchronously, so the
//    produce requests of one connection reach their leaders' append streams in the order the
//    client sent them; they are served concurrently and answered in order.
// 3. Bounds. Until the session is authenticated (a SASL listener), one request at a time, so
//    SaslAuthenticate's answer decides before the next request is read. Requests are taken out of the splitter only while fewer than inFlightRequestsMax are
//    unanswered, the bytes they hold (their requests, the responses done behind an unanswered
//    one, and the responses written and not yet sent) are under queuedBytesMax, and the socket's
//    write buffer is not full; otherwise the socket is paused, so a client that pipelines
//    without end, or never reads its responses, holds at most inFlightRequestsMax requests and
//    about queuedBytesMax bytes plus one request here and is held back by TCP. The byte bound is
//    Kafka's queued.max.request.bytes; a single request larger than it is still taken when
//    nothing else is in flight, so every request up to socket.request.max.bytes can be served.
// 4. Refusal. A frame the handler refuses (an unknown API key, an unsupported version of an API
//    other than ApiVersions, a body that does not decode) stops all reading: the responses of
//    the requests before it are still written, then the connection ends (a FIN after the last
//    byte). The reason is logged with the peer, the API and the correlation id. This is Kafka's
//    behaviour: it closes the connection of a request it cannot parse.
// 5. Draining (the listener stops): nothing more is read, handlers in flight are aborted, the
//    responses already done are written, then the connection ends.
// 6. Closing (peer gone, idle for connectionsMaxIdleMs, a failed write): the socket is destroyed
//    and the answers still in flight are dropped when they come.
import { exitOnAssertionFailure, type Logger } from '@spool/common';
import { FrameSplitter, ProtocolError } from '@spool/protocol';
import type net from 'node:net';
import {
  KafkaRequestRefused,
  peekRequestHeader,
  requestFixedHeaderBytes,
  type KafkaRequestFrame,
} from './kafka-request-frame';
import { KafkaSession } from './kafka-session';

/** After the connection's last response, how long the peer has to close its side. */
const closeLingerMs = 5_000;
/** The size prefix of every Kafka frame. */
const sizeFieldBytes = 4;

export const KafkaConnectionState = {
  /** Reading and serving. */
  Open: 'open',
  /** A frame was refused or the listener stops: answering what came before, then ending. */
  Ending: 'ending',
  /** The socket is ending or destroyed; nothing more is written. */
  Closing: 'closing',
} as const;

export type KafkaConnectionState = (typeof KafkaConnectionState)[keyof typeof KafkaConnectionState];

/** What the connection asks of the APIs behind it. */
export interface KafkaRequestHandler {
  /**
   * Serves one request. Called synchronously in arrival order (point 2). Resolves with the
   * response frame without its size prefix (response header included), as one buffer or as
   * consecutive pieces (records passed by reference, not copied), or undefined when the
   * request has no response (Produce with acks=0). Throws KafkaRequestRefused, synchronously,
   * to close the connection before any later request is started (point 4), or rejects with it
   * for a failure found while serving; any other failure is a bug, logged, and ends the
   * connection too.
   */
  serve(request: KafkaRequestFrame, context: KafkaRequestContext): Promise<KafkaResponseFrame>;
}

/** A response without its size prefix, in pieces; undefined for a request without response. */
export type KafkaResponseFrame = Buffer | readonly Buffer[] | undefined;

export interface KafkaRequestContext {
  /** host:port of the client, for logs and per-connection bounds. */
  readonly peer: string;
  /** The connection's principal when the request was read: `User:<name>`, or User:ANONYMOUS. */
  readonly principal: string;
  /** The client's IP address without its port (the host of Kafka's ACLs). */
  readonly clientHost: string;
  /** The connection's authentication; SaslHandshake and SaslAuthenticate move it on. */
  readonly session: KafkaSession;
  /** Aborted when the connection closes or drains: long polls stop waiting. */
  readonly signal: AbortSignal;
  /**
   * The storage broker whose port the connection arrived on (kafka-broker-ports.ts), for the
   * few APIs a broker answers about itself (DescribeLogDirs); undefined on the bootstrap port.
   */
  readonly brokerId: number | undefined;
}

export interface KafkaConnectionOptions {
  readonly logger: Logger;
  readonly handler: KafkaRequestHandler;
  /** socket.request.max.bytes: the largest request size field accepted. */
  readonly requestBytesMax: number;
  /** Requests read and not yet answered, at most (point 3). */
  readonly inFlightRequestsMax: number;
  /** queued.max.request.bytes: no request is read while the bytes held reach this (point 3). */
  readonly queuedBytesMax: number;
  /** connections.max.idle.ms: close a connection with nothing in flight for this long. */
  readonly connectionsMaxIdleMs: number;
  /** A SASL listener: the session starts unauthenticated (kafka-session.ts). */
  readonly authenticationRequired?: boolean;
  /** The verified client certificate's principal, on a TLS listener that asks for one. */
  readonly certificatePrincipal?: string | undefined;
  /** The storage broker whose port the connection arrived on; undefined: the bootstrap port. */
  readonly brokerId?: number;
  /** Called once per request taken off the wire, and once per refusal, with the reason. */
  readonly onRequest?: (frame: KafkaRequestFrame) => void;
  readonly onRefused?: (reason: string) => void;
}

/** A request's place in the response order. */
interface ResponseSlot {
  done: boolean;
  response: KafkaResponseFrame;
  /** The request's bytes, plus the response's once done: what this slot holds. */
  bytes: number;
}

export class KafkaConnection {
  /** Resolves once the socket closed. */
  readonly closed: Promise<void>;
  private stateValue: KafkaConnectionState = KafkaConnectionState.Open;
  private readonly splitter: FrameSplitter;
  private readonly slots: ResponseSlot[] = [];
  private readonly abortController = new AbortController();
  private readonly logger: Logger;
  private readonly peer: string;
  private readonly session: KafkaSession;
  private idleTimer: NodeJS.Timeout | undefined;
  /** The sum of the slots' bytes. */
  private slotBytes = 0;

  constructor(
    private readonly socket: net.Socket,
    private readonly options: KafkaConnectionOptions,
  ) {
    this.peer = `${socket.remoteAddress}:${socket.remotePort}`;
    this.logger = options.logger.child({ peer: this.peer });
    this.session = KafkaSession.forPeer(socket.remoteAddress, {
      authenticationRequired: options.authenticationRequired === true,
      certificatePrincipal: options.certificatePrincipal,
    });
    this.splitter = new FrameSplitter({
      direction: 'request',
      frameBytesMax: () => sizeFieldBytes + options.requestBytesMax,
      headerBytesMin: requestFixedHeaderBytes,
    });
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('drain', () => this.takeFrames());
    socket.on('end', () => this.close('the peer ended the connection'));
    socket.on('error', (error) => this.logger.debug({ err: error }, 'kafka socket error'));
    socket.on('close', () => this.close('the socket closed'));
    this.startIdleTimer();
  }

  get state(): KafkaConnectionState {
    return this.stateValue;
  }

  /** Requests read and not yet answered. */
  get inFlightRequests(): number {
    return this.slots.length;
  }

  /** What point 3's byte bound counts: requests and responses held, and bytes not yet sent. */
  get queuedBytes(): number {
    return this.slotBytes + this.socket.writableLength;
  }

  /** Point 5. */
  drain(): void {
    this.end('the Kafka listener is shutting down');
  }

  /** Point 6: destroy the socket now; answers still in flight are dropped. */
  close(reason: string): void {
    if (this.stateValue === KafkaConnectionState.Closing) return;
    this.transitionTo(KafkaConnectionState.Closing, reason);
    this.clearIdleTimer();
    this.slots.length = 0;
    this.slotBytes = 0;
    this.abortController.abort(new Error(`the Kafka connection closed: ${reason}`));
    this.socket.destroy();
  }

  /** Points 4 and 5: read nothing more; end once the responses before this point are written. */
  private end(reason: string): void {
    if (this.stateValue !== KafkaConnectionState.Open) return;
    this.transitionTo(KafkaConnectionState.Ending, reason);
    this.clearIdleTimer();
    this.socket.pause();
    this.abortController.abort(new Error(`the Kafka connection ends: ${reason}`));
    this.writeDoneResponses();
  }

  private onData(chunk: Buffer): void {
    if (this.stateValue !== KafkaConnectionState.Open) return;
    this.clearIdleTimer();
    this.splitter.push(chunk);
    this.takeFrames();
    this.maybeStartIdleTimer();
  }

  /** Points 1 to 3: start every complete request while there is room, then set the flow. */
  private takeFrames(): void {
    while (this.stateValue === KafkaConnectionState.Open && this.hasRoom()) {
      let frame: Buffer | undefined;
      try {
        frame = this.splitter.next();
      } catch (error) {
        if (!(error instanceof ProtocolError)) throw error;
        this.refuse(`${error.message} (socket.request.max.bytes ${this.options.requestBytesMax})`);
        return;
      }
      if (frame === undefined) break;
      this.start(frame.subarray(sizeFieldBytes));
    }
    if (this.stateValue !== KafkaConnectionState.Open) return;
    if (this.hasRoom()) this.socket.resume();
    else this.socket.pause();
  }

  private hasRoom(): boolean {
    const inFlightRequestsMax = this.session.authenticated ? this.options.inFlightRequestsMax : 1;
    return (
      this.slots.length < inFlightRequestsMax &&
      !this.socket.writableNeedDrain &&
      (this.slots.length === 0 || this.queuedBytes < this.options.queuedBytesMax)
    );
  }

  private start(bytes: Buffer): void {
    const request = peekRequestHeader(bytes);
    this.options.onRequest?.(request);
    const slot: ResponseSlot = { done: false, response: undefined, bytes: bytes.length };
    this.slots.push(slot);
    this.slotBytes += slot.bytes;
    let served: Promise<KafkaResponseFrame>;
    try {
      served = this.options.handler.serve(request, {
        peer: this.peer,
        principal: this.session.principal,
        clientHost: this.session.clientHost,
        session: this.session,
        signal: this.abortController.signal,
        brokerId: this.options.brokerId,
      });
    } catch (error) {
      if (error instanceof KafkaRequestRefused) {
        // The requests before this one are still answered; this one and later ones are not.
        this.dropSlotsFrom(slot);
        this.refuse(`${error.message} (${describe(request)})`);
        return;
      }
      served = Promise.reject(error);
    }
    served.then(
      (response) => {
        // Dropped (the connection closed, or a request before it failed): nothing to write.
        if (!this.slots.includes(slot)) return;
        slot.done = true;
        slot.response = response;
        const responseBytes = responseLength(response);
        slot.bytes += responseBytes;
        this.slotBytes += responseBytes;
        // A failed authentication: its answer is written, then the connection ends.
        if (this.session.failed) this.end('SASL authentication failed');
        this.writeDoneResponses();
      },
      (error: unknown) => {
        if (this.stateValue === KafkaConnectionState.Closing) return;
        if (error instanceof KafkaRequestRefused) {
          // Refused after it started (an operating error with no answer of its own): the
          // requests before it are answered, the ones after it dropped, as in point 4.
          this.dropSlotsFrom(slot);
          this.refuse(`${error.message} (${describe(request)})`);
          return;
        }
        exitOnAssertionFailure(error, this.logger, { api: request.apiKey });
        this.logger.error(
          { err: error, apiKey: request.apiKey, correlationId: request.correlationId },
          'a Kafka request failed unexpectedly; closing its connection',
        );
        this.dropSlotsFrom(slot);
        this.end('a request failed unexpectedly');
      },
    );
  }

  /** Forgets this slot and every later one: their answers are never written. */
  private dropSlotsFrom(slot: ResponseSlot): void {
    for (const dropped of this.slots.splice(this.slots.indexOf(slot))) {
      this.slotBytes -= dropped.bytes;
    }
  }

  /** Point 4. */
  private refuse(reason: string): void {
    this.options.onRefused?.(reason);
    this.logger.warn(`Kafka listener closes the connection of ${this.peer}: ${reason}`);
    this.end(reason);
  }

  /** Writes the responses at the head of the order that are done; ends an ending connection. */
  private writeDoneResponses(): void {
    if (this.stateValue === KafkaConnectionState.Closing) return;
    while (this.slots[0]?.done === true) {
      const { response, bytes } = this.slots.shift()!;
      this.slotBytes -= bytes;
      if (response === undefined) continue;
      const pieces = Buffer.isBuffer(response) ? [response] : response;
      const size = Buffer.allocUnsafe(sizeFieldBytes);
      size.writeInt32BE(responseLength(response), 0);
      this.socket.cork();
      this.socket.write(size);
      for (const piece of pieces) if (piece.length > 0) this.socket.write(piece);
      this.socket.uncork();
    }
    if (this.stateValue === KafkaConnectionState.Ending) {
      if (this.slots.length === 0) this.endSocket();
      return;
    }
    this.takeFrames();
    this.maybeStartIdleTimer();
  }

  /** A FIN after the last response; reading on keeps unread bytes from turning it into a reset. */
  private endSocket(): void {
    this.transitionTo(KafkaConnectionState.Closing, 'the last response was written');
    this.socket.end();
    this.socket.removeAllListeners('data');
    this.socket.on('data', () => undefined);
    this.socket.resume();
    setTimeout(() => this.socket.destroy(), closeLingerMs).unref();
  }

  private maybeStartIdleTimer(): void {
    if (this.slots.length === 0 && this.stateValue === KafkaConnectionState.Open) {
      this.startIdleTimer();
    }
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

  private transitionTo(next: KafkaConnectionState, reason: string): void {
    this.logger.debug({ from: this.stateValue, to: next, reason }, 'kafka connection state');
    this.stateValue = next;
  }
}

function responseLength(response: KafkaResponseFrame): number {
  if (response === undefined) return 0;
  if (Buffer.isBuffer(response)) return response.length;
  return response.reduce((sum, piece) => sum + piece.length, 0);
}

function describe(request: KafkaRequestFrame): string {
  return (
    `apiKey ${request.apiKey}, apiVersion ${request.apiVersion}, ` +
    `correlationId ${request.correlationId}`
  );
}

import * as grpc from '@grpc/grpc-js';
import {
  CommonErrorCode,
  SpoolError,
  StreamPipeline,
  backoffMs,
  callOnce,
  createGrpcClient,
  errorCodeMetadataKey,
  sleep,
  type Logger,
} from '@spool/common';
import {
  GatewayServiceClient,
  type ConsumeRequest,
  type ConsumeResponse,
  type ProduceRequest,
  type ProduceResponse,
  type ProduceStreamRequest,
  type ProduceStreamResponse,
} from '@spool/protocol';
import { ClientErrorCode, clientError } from './errors';

/**
 * The SDK's only way out: gRPC channels to the gateways in `brokers`. Calls go to one gateway at
 * a time; when it cannot be reached (UNAVAILABLE), or, with more than one address, lets a call
 * go unanswered past its deadline (a gateway paused or cut off, which refuses nothing), the next
 * call goes to the next address, so a list of gateways behind no load balancer still fails over.
 * Both are what Kafka's clients do with a node that refuses or times out a request: they
 * disconnect it and use another; the gateways are interchangeable and hold no state. With
 * several gateways, a keepalive ping unanswered for 1.5 s (gatewayKeepaliveOptions) counts as
 * unreachable too, so a paused gateway is left before any deadline passes. Each producer,
 * consumer and admin has its own connection and closes it on close, as Kafka and KafkaJS
 * clients do.
 */

/** A ts-proto grpc-js unary method: (request, metadata, options, callback). */
export type GatewayUnaryMethod<Request, Response> = (
  request: Request,
  metadata: grpc.Metadata,
  options: Partial<grpc.CallOptions>,
  callback: (error: grpc.ServiceError | null, response: Response) => void,
) => grpc.ClientUnaryCall;

export type MethodSelector<Request, Response> = (
  client: GatewayServiceClient,
) => GatewayUnaryMethod<Request, Response>;

export interface GatewayCallOptions {
  /** Per attempt. */
  readonly deadlineMs: number;
  /** Attempts in all, the first included; retriable failures are tried again up to this. */
  readonly attempts?: number;
  readonly backoffInitialMs?: number;
  readonly backoffMaxMs?: number;
  /** Called before each retry, e.g. to drop cached metadata. */
  readonly onRetry?: (error: SpoolError, attempt: number) => void;
  /** No attempt starts after this Date.now() value: the last error is thrown instead. */
  readonly giveUpAtMs?: number;
}

/** Options of a call whose response may carry its error (InitProducerId's `error` field). */
export interface GatewayAnswerCallOptions<Response> extends GatewayCallOptions {
  /** The error an answer carries, if any: handled as if the call had failed with it. */
  readonly answerErrorOf: (response: Response) => SpoolError | undefined;
}

export const clientIdMetadataKey = 'spool-client-id';

/**
 * With another gateway to go to, each channel pings its gateway every second and drops the
 * connection when a ping goes unanswered for 1.5 s: a paused or cut-off gateway (whose kernel
 * still holds the TCP connection, so nothing is refused) is then seen in about 2.5 s, not when
 * a call's deadline (request.timeout.ms) passes; the calls on it fail with UNAVAILABLE and the
 * next ones go to the next gateway. A busy gateway answers pings from its event loop, so a false
 * alarm costs a retry on the other gateway, never a record (produces are idempotent).
 */
export const gatewayKeepaliveOptions = {
  'grpc.keepalive_time_ms': 1_000,
  'grpc.keepalive_timeout_ms': 1_500,
} as const;

/**
 * Produce requests waiting on one ProduceStream, at most: far above any producer's in-flight
 * bound, a guard against a runaway caller.
 */
export const produceStreamWaitingMax = 4_096;

export class GatewayConnection {
  private readonly clients = new Map<number, GatewayServiceClient>();
  /** Per gateway in the list: the ProduceStream produces are pipelined on. */
  private readonly producePipelines = new Map<
    number,
    StreamPipeline<ProduceStreamRequest, ProduceStreamResponse>
  >();
  /** Set once the gateway answered ProduceStream with UNIMPLEMENTED: unary Produce from then. */
  private produceStreamUnsupported = false;
  private currentIndex = 0;
  private closed = false;
  /** Told after each fail-over, e.g. so the Consume stream moves to the next gateway too. */
  private readonly failOverListeners = new Set<() => void>();

  constructor(
    private readonly brokers: readonly string[],
    private readonly clientId: string,
    private readonly logger: Logger,
    private readonly credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
  ) {}

  get address(): string {
    return this.brokers[this.currentIndex]!;
  }

  /** Which gateway of `brokers` calls go to now: a failure names it in failOver(). */
  get gatewayIndex(): number {
    return this.currentIndex;
  }

  /** The client of the gateway in use, made on first use. */
  client(): GatewayServiceClient {
    if (this.closed) {
      throw clientError(ClientErrorCode.ClientClosed, 'the connection to the gateway is closed');
    }
    let client = this.clients.get(this.currentIndex);
    if (client === undefined) {
      client = createGrpcClient(
        GatewayServiceClient,
        this.address,
        this.brokers.length > 1 ? gatewayKeepaliveOptions : {},
        this.credentials,
      );
      this.clients.set(this.currentIndex, client);
    }
    return client;
  }

  metadata(): grpc.Metadata {
    const metadata = new grpc.Metadata();
    metadata.set(clientIdMetadataKey, this.clientId);
    return metadata;
  }

  /**
   * Moves the next calls to the next gateway in the list, if the failure happened on the gateway
   * still in use (`failedIndex`, the gatewayIndex when the call or stream began): when a gateway
   * goes silent, every call and stream on it fails at once (a heartbeat, a commit, the Consume
   * stream), and each moving one step on would, with two gateways, bring every second failure
   * back to the silent one. The ProduceStream to the gateway left behind closes once the
   * produces still waiting on it are settled, so a client that failed over holds no stream open
   * on a gateway it no longer uses.
   */
  failOver(reason: SpoolError, failedIndex: number): void {
    if (this.brokers.length === 1 || failedIndex !== this.currentIndex) return;
    const from = this.address;
    const leftBehind = this.producePipelines.get(this.currentIndex);
    this.producePipelines.delete(this.currentIndex);
    leftBehind?.closeWhenIdle();
    this.currentIndex = (this.currentIndex + 1) % this.brokers.length;
    this.logger.warn(
      { from, to: this.address, code: reason.code, reason: reason.message },
      'gateway unreachable, moving to the next one',
    );
    for (const listener of this.failOverListeners) listener();
  }

  /** Calls `listener` after every fail-over; returns how to stop. */
  onFailOver(listener: () => void): () => void {
    this.failOverListeners.add(listener);
    return () => this.failOverListeners.delete(listener);
  }

  /**
   * Whether a failed call says the gateway in use should be left: it could not be reached, or,
   * when there is another to go to, it let the call's deadline pass without any answer (its own
   * REQUEST_TIMED_OUT answer carries a code and does not count).
   */
  private leavesGateway(error: unknown): error is SpoolError {
    if (!(error instanceof SpoolError)) return false;
    if (error.code === CommonErrorCode.Unavailable) return true;
    if (this.brokers.length === 1 || error.code !== CommonErrorCode.RequestTimedOut) return false;
    const cause = error.cause as Partial<grpc.ServiceError> | undefined;
    if (cause?.code === undefined) return true;
    return (
      cause.code === grpc.status.DEADLINE_EXCEEDED &&
      (cause.metadata?.get(errorCodeMetadataKey).length ?? 0) === 0
    );
  }

  /** One attempt; an unreachable gateway moves the next call to the next address. */
  async callOnce<Request, Response>(
    select: MethodSelector<Request, Response>,
    request: Request,
    deadlineMs: number,
  ): Promise<Response> {
    const index = this.currentIndex;
    const client = this.client();
    try {
      return await callOnce(client, select(client), request, {
        deadlineMs,
        metadata: this.metadata(),
      });
    } catch (error) {
      if (this.leavesGateway(error)) this.failOver(error, index);
      throw error;
    }
  }

  /** Attempts until success, a non-retriable error, or `attempts` are used up. */
  async call<Request, Response>(
    select: MethodSelector<Request, Response>,
    request: Request,
    options: GatewayCallOptions | GatewayAnswerCallOptions<Response>,
  ): Promise<Response> {
    const attempts = options.attempts ?? 1;
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await this.callOnce(select, request, options.deadlineMs);
        const answered = 'answerErrorOf' in options ? options.answerErrorOf(response) : undefined;
        if (answered !== undefined) throw answered;
        return response;
      } catch (error) {
        if (!(error instanceof SpoolError) || !error.retriable || attempt >= attempts) throw error;
        if (this.closed) throw error;
        const waitMs = backoffMs(attempt, options);
        if (Date.now() + waitMs > (options.giveUpAtMs ?? Number.POSITIVE_INFINITY)) throw error;
        options.onRetry?.(error, attempt);
        await sleep(waitMs);
      }
    }
  }

  /**
   * One produce request, on the gateway's ProduceStream (gateway.proto): one long-lived stream
   * per gateway, a message per request, instead of an HTTP/2 stream per call. Failures are those
   * of a unary call: retriable when the stream broke or ended, UNAVAILABLE moves the next calls
   * to the next gateway. A gateway without ProduceStream (an older one) gets unary Produce.
   */
  async produce(request: ProduceRequest, deadlineMs: number): Promise<ProduceResponse> {
    const byCall = (): Promise<ProduceResponse> =>
      this.callOnce((client) => client.produce, request, deadlineMs);
    if (this.produceStreamUnsupported) return byCall();
    const index = this.currentIndex;
    try {
      const response = await this.producePipeline().send(request, deadlineMs);
      return { results: response.results };
    } catch (error) {
      // Nothing was started on a stream the gateway refused as unknown: send it as a call.
      if (this.produceStreamUnsupported) return byCall();
      // The stream's own deadline: the gateway answered nothing (a refusal comes as results).
      if (this.leavesGateway(error)) this.failOver(error, index);
      throw error;
    }
  }

  private producePipeline(): StreamPipeline<ProduceStreamRequest, ProduceStreamResponse> {
    const index = this.currentIndex;
    let pipeline = this.producePipelines.get(index);
    if (pipeline === undefined) {
      const client = this.client();
      pipeline = new StreamPipeline({
        open: () => client.produceStream(this.metadata()),
        peerName: `gateway ${this.brokers[index]}`,
        requestName: 'produce',
        waitingMax: produceStreamWaitingMax,
        onBroken: (error) => {
          if (error.code === grpc.status.UNIMPLEMENTED) {
            this.produceStreamUnsupported = true;
          } else if (error.code === grpc.status.UNAVAILABLE) {
            this.failOver(
              new SpoolError(CommonErrorCode.Unavailable, error.details || error.message, {
                retriable: true,
              }),
              index,
            );
          }
        },
      });
      this.producePipelines.set(index, pipeline);
    }
    return pipeline;
  }

  /** Opens a Consume stream on the gateway in use; the caller ends or cancels it. */
  openConsumeStream(): grpc.ClientDuplexStream<ConsumeRequest, ConsumeResponse> {
    return this.client().consume(this.metadata());
  }

  /** Waits until some gateway in the list accepts a connection, trying each in turn. */
  async waitForReady(deadlineMs: number): Promise<void> {
    const deadline = Date.now() + deadlineMs;
    let lastError: Error | undefined;
    for (let tried = 0; tried < this.brokers.length; tried++) {
      const client = this.client();
      const perAddressDeadline = Math.max(
        Date.now() + 1,
        Math.min(deadline, Date.now() + deadlineMs / this.brokers.length),
      );
      const error = await new Promise<Error | undefined>((resolve) =>
        client.waitForReady(perAddressDeadline, (failure) => resolve(failure ?? undefined)),
      );
      if (error === undefined) return;
      lastError = error;
      this.failOver(clientError(CommonErrorCode.Unavailable, error.message), this.currentIndex);
    }
    throw new SpoolError(
      CommonErrorCode.Unavailable,
      `no gateway of ${this.brokers.join(', ')} answered within ${deadlineMs} ms`,
      { retriable: true, cause: lastError },
    );
  }

  close(): void {
    this.closed = true;
    for (const pipeline of this.producePipelines.values()) pipeline.close();
    this.producePipelines.clear();
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }
}

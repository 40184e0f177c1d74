import * as grpc from '@grpc/grpc-js';
import { SpoolError } from './errors';
import { fromGrpcError } from './grpc-errors';
import { grpcConnectionWindowBytes, grpcMaxMessageBytesDefault } from './grpc-server';

/**
 * The client side of our gRPC: channels with bounded message sizes and keepalive, calls with a
 * deadline always, and retries of retriable failures with capped exponential backoff and jitter.
 */
export interface CallOptions {
  /** Per attempt: a call without a deadline can hang forever on a stalled peer. */
  readonly deadlineMs?: number;
  /** Attempts in all, the first included. */
  readonly attempts?: number;
  readonly backoffInitialMs?: number;
  readonly backoffMaxMs?: number;
  readonly metadata?: grpc.Metadata;
  /** Called before each retry, e.g. to refresh metadata after NOT_LEADER_OR_FOLLOWER. */
  readonly onRetry?: (error: SpoolError, attempt: number) => void;
}

export const callDeadlineMsDefault = 10_000;
const attemptsDefault = 5;
const backoffInitialMsDefault = 50;
const backoffMaxMsDefault = 2_000;

export const grpcChannelOptions: grpc.ChannelOptions = {
  'grpc.max_receive_message_length': grpcMaxMessageBytesDefault,
  'grpc.max_send_message_length': grpcMaxMessageBytesDefault,
  'grpc.keepalive_time_ms': 30_000,
  'grpc.keepalive_timeout_ms': 10_000,
  'grpc.keepalive_permit_without_calls': 1,
  // The window this client grants servers for responses (fetches): see grpcStreamWindowBytes.
  'grpc-node.flow_control_window': grpcConnectionWindowBytes,
  // grpc's reconnect backoff starts at 1 s and grows 1.6x per refused attempt up to 120 s: a
  // peer down for ten seconds was then failed fast for seconds after it was back (brokers'
  // heartbeats missed a new active controller's session timeout; an SDK stayed off a restarted
  // gateway). Kafka's clients reconnect after
  // reconnect.backoff.ms (50 ms) growing to reconnect.backoff.max.ms (1 s); the same here.
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 1_000,
};

type ClientConstructor<Client> = new (
  address: string,
  credentials: grpc.ChannelCredentials,
  options?: Partial<grpc.ChannelOptions>,
) => Client;

/**
 * A channel with grpcChannelOptions, and `options` over them (e.g. a shorter keepalive); TLS with
 * `credentials` (TransportSecurity.channelCredentials()), plaintext without.
 */
export function createGrpcClient<Client>(
  constructor: ClientConstructor<Client>,
  address: string,
  options: Partial<grpc.ChannelOptions> = {},
  credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
): Client {
  return new constructor(address, credentials, {
    ...grpcChannelOptions,
    ...options,
  });
}

/** A ts-proto grpc-js unary method: (request, metadata, options, callback). */
export type UnaryMethod<Request, Response> = (
  request: Request,
  metadata: grpc.Metadata,
  options: Partial<grpc.CallOptions>,
  callback: (error: grpc.ServiceError | null, response: Response) => void,
) => grpc.ClientUnaryCall;

/** One call, no retry: resolves with the response or rejects with a SpoolError. */
export function callOnce<Request, Response>(
  client: object,
  method: UnaryMethod<Request, Response>,
  request: Request,
  options: CallOptions = {},
): Promise<Response> {
  const deadline = new Date(Date.now() + (options.deadlineMs ?? callDeadlineMsDefault));
  return new Promise((resolve, reject) => {
    method.call(
      client,
      request,
      options.metadata ?? new grpc.Metadata(),
      { deadline },
      (error, response) => (error ? reject(fromGrpcError(error)) : resolve(response)),
    );
  });
}

/** A call retried while it fails with a retriable error, up to `attempts` times. */
export async function callWithRetry<Request, Response>(
  client: object,
  method: UnaryMethod<Request, Response>,
  request: Request,
  options: CallOptions = {},
): Promise<Response> {
  const attempts = options.attempts ?? attemptsDefault;
  for (let attempt = 1; ; attempt++) {
    try {
      return await callOnce(client, method, request, options);
    } catch (error) {
      if (!(error instanceof SpoolError) || !error.retriable || attempt >= attempts) throw error;
      options.onRetry?.(error, attempt);
      await sleep(backoffMs(attempt, options));
    }
  }
}

export function backoffMs(
  attempt: number,
  options: { backoffInitialMs?: number; backoffMaxMs?: number } = {},
): number {
  const initial = options.backoffInitialMs ?? backoffInitialMsDefault;
  const max = options.backoffMaxMs ?? backoffMaxMsDefault;
  const exponential = Math.min(max, initial * 2 ** (attempt - 1));
  // Full jitter: clients that failed together do not retry together.
  return Math.round(exponential / 2 + (Math.random() * exponential) / 2);
}

export function sleep(durationMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, durationMs));
}

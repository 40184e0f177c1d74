import type * as http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation } from 'grpc-health-check';
import { ConfigError } from './config';
import { CommonErrorCode, SpoolError } from './errors';
import { toGrpcStatus } from './grpc-errors';
import { exitOnAssertionFailure } from './assertion-failure';
import type { Logger } from './logger';
import { loadReflectionDescriptors, standardServiceNames } from './reflection-descriptors';
import { apiNameOfPath, type RequestMetrics } from './request-metrics';
import { bindPrincipal } from './security/principal';
import { ensurePeerIsService } from './tls/service-identity';
import type { TransportSecurity } from './tls/transport-security';

/**
 * A grpc-js server with what every Spool service needs: the standard health service
 * (`grpc.health.v1`), server reflection (so `grpcurl list` works), bounded message sizes,
 * keepalive, typed-error mapping, request metrics for every method (count, errors by code,
 * latency, labelled by the RPC's name), and a drain on shutdown that lets in-flight calls finish
 * within a bound before the rest are cancelled.
 */

/** Large enough for a full produce request of max-size batches; anything bigger is refused. */
export const grpcMaxMessageBytesDefault = 64 * 1024 * 1024;
/** Pings keep idle connections through NATs and load balancers and detect dead peers. */
const keepaliveTimeMs = 30_000;
const keepaliveTimeoutMs = 10_000;

/**
 * The server's pings: one every `timeMs`, and a connection whose peer leaves one unanswered for
 * `timeoutMs` is dropped, which cancels its calls and streams (how a server learns that a
 * paused or cut-off peer, whose kernel keeps the connection open, is gone).
 */
export interface GrpcServerKeepalive {
  readonly timeMs: number;
  readonly timeoutMs: number;
}
/**
 * HTTP/2 flow-control windows the server grants its peers, per stream and per connection. The
 * protocol's default, 64 KiB, makes a client stop after every 64 KiB of a 1 MiB produce request
 * until the server has been scheduled to answer with WINDOW_UPDATE: on a busy machine that wait,
 * not the bytes, set the produce rate. grpc-js offers the window as a channel option
 * (`grpc-node.flow_control_window`) for clients only; the server applies it to each session.
 * The bound on memory stays the windows and the gateway's produce admission per connection.
 */
export const grpcStreamWindowBytes = 4 * 1024 * 1024;
export const grpcConnectionWindowBytes = 16 * 1024 * 1024;

export type UnaryHandler<Request, Response> = (
  request: Request,
  call: grpc.ServerUnaryCall<Request, Response>,
) => Promise<Response>;

export type ServerStreamHandler<Request, Response> = (
  request: Request,
  call: grpc.ServerWritableStream<Request, Response>,
) => Promise<void>;

export type BidiStreamHandler<Request, Response> = (
  call: grpc.ServerDuplexStream<Request, Response>,
) => Promise<void>;

export class GrpcServer {
  readonly server: grpc.Server;
  private readonly health = new HealthImplementation({ '': 'NOT_SERVING' });
  private readonly serviceNames: string[] = [];
  private readonly inFlight = new Set<Promise<unknown>>();
  private closing = false;
  private readonly descriptorSetPaths: readonly string[];
  private readonly requestMetrics: RequestMetrics | undefined;
  private readonly transportSecurity: TransportSecurity | undefined;

  constructor(
    private readonly logger: Logger,
    options: {
      maxMessageBytes: number;
      descriptorSetPaths: readonly string[];
      /** Where every call is counted and timed; without it calls are not measured. */
      requestMetrics?: RequestMetrics;
      /** TLS for the listener (security.protocol=SSL); plaintext without it. */
      transportSecurity?: TransportSecurity;
      keepalive?: GrpcServerKeepalive;
    },
  ) {
    this.requestMetrics = options.requestMetrics;
    this.transportSecurity = options.transportSecurity;
    this.server = new grpc.Server({
      'grpc.max_receive_message_length': options.maxMessageBytes,
      'grpc.max_send_message_length': options.maxMessageBytes,
      'grpc.keepalive_time_ms': options.keepalive?.timeMs ?? keepaliveTimeMs,
      'grpc.keepalive_timeout_ms': options.keepalive?.timeoutMs ?? keepaliveTimeoutMs,
      'grpc.keepalive_permit_without_calls': 1,
    });
    this.health.addToServer(this.server);
    this.descriptorSetPaths = options.descriptorSetPaths;
  }

  /**
   * Registers a service. Handlers are plain async functions; whatever they throw reaches the
   * client as a status with the error's code, except a failed assertion, which stops the process.
   */
  addService(
    definition: grpc.ServiceDefinition,
    implementation: Record<string, (...args: never[]) => Promise<unknown>>,
    options: {
      /**
       * Authenticates each call before its handler runs and binds the principal it returns to
       * the call (principalOf(call)); a rejection (SASL_AUTHENTICATION_FAILED) answers the call
       * UNAUTHENTICATED without running the handler. Absent: every call is User:ANONYMOUS.
       */
      readonly authenticate?: (call: grpc.ServerUnaryCall<unknown, unknown>) => Promise<string>;
      /**
       * Under TLS, every call must come from a Spool service's certificate (service-identity.ts);
       * any other peer is answered CLUSTER_AUTHORIZATION_FAILED (PERMISSION_DENIED).
       */
      readonly peersMustBeServices?: boolean;
    } = {},
  ): void {
    const wrapped: grpc.UntypedServiceImplementation = {};
    const guarded = options.peersMustBeServices === true && this.transportSecurity !== undefined;
    if (guarded && this.transportSecurity?.clientAuthentication !== 'required') {
      throw new ConfigError(
        'ssl.client.auth=none cannot tell Spool services from clients, and this service ' +
          'answers services only: set ssl.client.auth=required',
      );
    }
    for (const [methodName, method] of Object.entries(definition)) {
      const handler = implementation[methodName] as
        ((...args: unknown[]) => Promise<unknown>) | undefined;
      if (handler === undefined) throw new Error(`no handler for ${method.path}`);
      const api = apiNameOfPath(method.path);
      const authenticate = options.authenticate;
      const checked = guarded
        ? (...args: unknown[]) => {
            // The call is the last argument of every handler shape (request, call) or (call).
            const call = args[args.length - 1] as grpc.ServerUnaryCall<unknown, unknown>;
            ensurePeerIsService(call.getAuthContext().sslPeerCertificate, api);
            return handler(...args);
          }
        : handler;
      wrapped[methodName] = this.wrap(
        method,
        authenticate === undefined
          ? checked
          : async (...args: unknown[]) => {
              const call = args[args.length - 1] as grpc.ServerUnaryCall<unknown, unknown>;
              bindPrincipal(call, await authenticate(call));
              return checked(...args);
            },
      );
    }
    this.server.addService(definition, wrapped);
    const serviceName = Object.values(definition)[0]?.path.split('/')[1];
    if (serviceName !== undefined) this.serviceNames.push(serviceName);
  }

  private wrap(
    method: grpc.MethodDefinition<unknown, unknown>,
    handler: (...args: unknown[]) => Promise<unknown>,
  ): grpc.UntypedHandleCall {
    const refuseWhileClosing = (): SpoolError | undefined =>
      this.closing
        ? new SpoolError(CommonErrorCode.ShuttingDown, 'the server is shutting down', {
            retriable: true,
          })
        : undefined;
    const api = apiNameOfPath(method.path);
    const unary = !method.requestStream && !method.responseStream;
    // Refusals while closing are counted too: a client sees them as failed calls.
    const measured = (run: () => Promise<unknown>): Promise<unknown> => {
      const end = this.requestMetrics?.begin(api, { timed: unary });
      let promise: Promise<unknown>;
      try {
        promise = run();
      } catch (error) {
        promise = Promise.reject(error);
      }
      if (end !== undefined) {
        promise.then(
          (response) => end({ response }),
          (error: unknown) => end({ error }),
        );
      }
      return promise;
    };
    const fail = (error: unknown): Partial<grpc.StatusObject> => {
      exitOnAssertionFailure(error, this.logger, { method: method.path });
      if (!(error instanceof SpoolError) || error.code === CommonErrorCode.Unknown) {
        this.logger.error({ err: error, method: method.path }, 'request failed unexpectedly');
      }
      return toGrpcStatus(error);
    };
    if (!method.requestStream && !method.responseStream) {
      return (
        call: grpc.ServerUnaryCall<unknown, unknown>,
        callback: grpc.sendUnaryData<unknown>,
      ) => {
        const refused = refuseWhileClosing();
        if (refused) {
          this.requestMetrics?.begin(api, { timed: false })({ error: refused });
          callback(toGrpcStatus(refused));
          return;
        }
        this.track(measured(() => handler(call.request, call))).then(
          (response) => callback(null, response),
          (error: unknown) => callback(fail(error)),
        );
      };
    }
    if (!method.requestStream && method.responseStream) {
      return (call: grpc.ServerWritableStream<unknown, unknown>) => {
        const refused = refuseWhileClosing();
        if (refused) {
          this.requestMetrics?.begin(api, { timed: false })({ error: refused });
          call.emit('error', toGrpcStatus(refused));
          return;
        }
        this.track(measured(() => handler(call.request, call))).then(
          () => call.end(),
          (error: unknown) => call.emit('error', fail(error)),
        );
      };
    }
    return (call: grpc.ServerDuplexStream<unknown, unknown>) => {
      const refused = refuseWhileClosing();
      if (refused) {
        this.requestMetrics?.begin(api, { timed: false })({ error: refused });
        call.emit('error', toGrpcStatus(refused));
        return;
      }
      this.track(measured(() => handler(call))).then(
        () => call.end(),
        (error: unknown) => call.emit('error', fail(error)),
      );
    };
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.inFlight.add(promise);
    const forget = (): void => void this.inFlight.delete(promise);
    promise.then(forget, forget);
    return promise;
  }

  get inFlightCalls(): number {
    return this.inFlight.size;
  }

  async listen(host: string, port: number): Promise<number> {
    // Reflection lists what this process serves (health and reflection itself included), not
    // every service in the descriptor sets.
    const reflected = [...this.serviceNames, ...standardServiceNames];
    new ReflectionService(loadReflectionDescriptors(this.descriptorSetPaths), {
      services: reflected,
    }).addToServer(this.server);
    const boundPort = await new Promise<number>((resolve, reject) => {
      this.server.bindAsync(
        `${host}:${port}`,
        this.transportSecurity?.serverCredentials() ?? grpc.ServerCredentials.createInsecure(),
        (error, bound) => (error ? reject(error) : resolve(bound)),
      );
    });
    this.widenFlowControlWindows();
    return boundPort;
  }

  /** See grpcStreamWindowBytes; grpc-js keeps its HTTP/2 servers in a private map. */
  private widenFlowControlWindows(): void {
    const servers = (this.server as unknown as { http2Servers?: Map<http2.Http2Server, unknown> })
      .http2Servers;
    if (!(servers instanceof Map)) {
      this.logger.warn('grpc-js keeps no http2Servers map; HTTP/2 windows stay at 64 KiB');
      return;
    }
    for (const server of servers.keys()) {
      server.on('session', (session: http2.ServerHttp2Session) => {
        session.settings({ initialWindowSize: grpcStreamWindowBytes });
        session.setLocalWindowSize(grpcConnectionWindowBytes);
      });
    }
  }

  setServing(serving: boolean): void {
    const status = serving ? 'SERVING' : 'NOT_SERVING';
    this.health.setStatus('', status);
    for (const name of this.serviceNames) this.health.setStatus(name, status);
  }

  /**
   * Stops taking new calls, waits up to `timeoutMs` for in-flight ones, then cancels the rest.
   */
  async shutdown(timeoutMs: number): Promise<{ drained: boolean }> {
    this.closing = true;
    this.setServing(false);
    const deadline = Date.now() + timeoutMs;
    while (this.inFlight.size > 0 && Date.now() < deadline) {
      await Promise.race([
        Promise.allSettled([...this.inFlight]),
        new Promise((resolve) => setTimeout(resolve, Math.max(1, deadline - Date.now()))),
      ]);
    }
    const drained = this.inFlight.size === 0;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(
        () => {
          this.server.forceShutdown();
          resolve();
        },
        Math.max(0, deadline - Date.now()),
      );
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    return { drained };
  }
}

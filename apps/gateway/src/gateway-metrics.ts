import * as grpc from '@grpc/grpc-js';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * The gateway's Prometheus metrics: requests, errors and latency per API (the RPC's name, as
 * Kafka's request metrics are per request type), connected clients, produce bytes in flight and
 * open Consume streams. Errors count both failed calls and partitions answered with an error,
 * by the Kafka code.
 */
export class GatewayMetrics {
  readonly requests: Counter<'api'>;
  readonly requestErrors: Counter<'api' | 'code'>;
  readonly requestDuration: Histogram<'api'>;
  readonly consumeBytes: Counter;

  constructor(
    registry: Registry,
    sources: {
      readonly server: grpc.Server;
      readonly produceInFlightBytes: () => number;
      readonly consumeStreams: () => number;
    },
  ) {
    this.requests = new Counter({
      name: 'spool_gateway_requests_total',
      help: 'Requests received, by API (Produce, Fetch, Consume streams opened, ...).',
      labelNames: ['api'],
      registers: [registry],
    });
    this.requestErrors = new Counter({
      name: 'spool_gateway_request_errors_total',
      help: 'Requests failed or partitions answered with an error, by API and error code.',
      labelNames: ['api', 'code'],
      registers: [registry],
    });
    this.requestDuration = new Histogram({
      name: 'spool_gateway_request_duration_seconds',
      help: 'Time to answer a unary request, by API (a Consume stream lives as its client does).',
      labelNames: ['api'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    });
    this.consumeBytes = new Counter({
      name: 'spool_gateway_consume_bytes_total',
      help: 'Record batch bytes pushed to Consume streams.',
      registers: [registry],
    });
    new Gauge({
      name: 'spool_gateway_connected_clients',
      help: 'Client connections (HTTP/2 sessions) open to this gateway.',
      registers: [registry],
      async collect() {
        this.set(await countServerSessions(sources.server));
      },
    });
    new Gauge({
      name: 'spool_gateway_produce_in_flight_bytes',
      help: 'Record bytes of produce requests received and not yet answered.',
      registers: [registry],
      collect() {
        this.set(sources.produceInFlightBytes());
      },
    });
    new Gauge({
      name: 'spool_gateway_consume_streams',
      help: 'Consume streams open.',
      registers: [registry],
      collect() {
        this.set(sources.consumeStreams());
      },
    });
  }

  /** Counts every `error.code` in the arrays of a response (results, partitions, topics). */
  countPartitionErrors(api: string, response: unknown): void {
    if (typeof response !== 'object' || response === null) return;
    // Group calls answer their errors in a top-level error field.
    const topLevel = (response as { error?: { code?: unknown } }).error?.code;
    if (typeof topLevel === 'string' && topLevel !== '')
      this.requestErrors.inc({ api, code: topLevel });
    for (const value of Object.values(response)) {
      if (!Array.isArray(value)) continue;
      for (const entry of value as unknown[]) {
        const code = (entry as { error?: { code?: unknown } } | null)?.error?.code;
        if (typeof code === 'string' && code !== '') this.requestErrors.inc({ api, code });
      }
    }
  }
}

/** Sessions per page of the channelz listing. */
const channelzPageSize = 1_000;

/**
 * The server's open HTTP/2 sessions, one per client connection, from grpc-js's channelz registry
 * (public API, on by default): grpc-js has no other way to tell who is connected.
 */
async function countServerSessions(server: grpc.Server): Promise<number> {
  const handlers = grpc.getChannelzHandlers();
  const serverId = String(server.getChannelzRef().id);
  let count = 0;
  let startSocketId = '0';
  for (;;) {
    const page = await new Promise<{ socket_ref?: Array<{ socket_id?: unknown }>; end?: boolean }>(
      (resolve, reject) => {
        handlers.GetServerSockets(
          {
            request: {
              server_id: serverId,
              start_socket_id: startSocketId,
              max_results: String(channelzPageSize),
            },
          } as never,
          (error, response) => (error ? reject(error) : resolve(response ?? {})),
        );
      },
    ).catch(() => ({ socket_ref: [], end: true }));
    const sockets = page.socket_ref ?? [];
    count += sockets.length;
    if (page.end !== false || sockets.length === 0) return count;
    startSocketId = String(Number(sockets.at(-1)!.socket_id) + 1);
  }
}

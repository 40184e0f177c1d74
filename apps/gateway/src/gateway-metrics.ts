import * as grpc from '@grpc/grpc-js';
import { Counter, Gauge, type Registry } from 'prom-client';

/**
 * The gateway's own Prometheus metrics: connected clients, produce bytes in flight, open Consume
 * streams and the bytes pushed to them. Requests, errors by code and latency per API (the RPC's
 * name) are the common `spool_request*` series every service's gRPC server records.
 */
export class GatewayMetrics {
  readonly consumeBytes: Counter;

  constructor(
    registry: Registry,
    sources: {
      readonly server: grpc.Server;
      readonly produceInFlightBytes: () => number;
      readonly consumeStreams: () => number;
    },
  ) {
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

import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from './logger';
import type { Readiness } from './readiness';
import { renderMetrics } from './text-metric-family';

/**
 * The operations port every service has: `/metrics` (Prometheus text format), `/healthz`
 * (the process answers) and `/readyz` (it should get traffic). Nothing else is served here.
 */
export interface OperationsServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startOperationsServer(options: {
  host: string;
  port: number;
  registry: Registry;
  readiness: Readiness;
  logger: Logger;
}): Promise<OperationsServer> {
  const { registry, readiness, logger } = options;
  const server = http.createServer((request, response) => {
    const url = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (url === '/metrics') {
      renderMetrics(registry).then(
        (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
        (error: unknown) => {
          logger.error({ err: error }, 'collecting metrics failed');
          response.writeHead(500).end();
        },
      );
      return;
    }
    if (url === '/healthz') {
      response.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      return;
    }
    if (url === '/readyz') {
      const ready = readiness.isReady();
      response
        .writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' })
        .end(ready ? 'ready\n' : `${readiness.reasons().join('\n')}\n`);
      return;
    }
    response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  });
  // A scrape or probe that stalls must not hold a socket forever.
  server.requestTimeout = 10_000;
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

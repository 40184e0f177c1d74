import * as net from 'node:net';
import { CommonErrorCode, SpoolError } from '@spool/common';

/**
 * Before a gateway command does anything, a TCP connection to the gateway must open: a gateway
 * that cannot be reached fails the command at once with UNAVAILABLE (exit code 3). Without this
 * the SDK would retry for as long as its own timeouts allow, which is right when a gateway goes
 * away mid-run (a leader failover, a restart) and wrong when there was never one to talk to: a
 * send waits out maxBlockMs, a minute, to say the same thing.
 *
 * Refused, unknown host and unreachable network fail in milliseconds; an address that drops
 * packets fails after `gatewayConnectTimeoutMs`.
 */

/** A TCP handshake on any network a command line reaches takes far less than this. */
export const gatewayConnectTimeoutMs = 5_000;

/** Resolves once `host:port` accepted a TCP connection (closed at once); else UNAVAILABLE. */
export function checkGatewayReachable(
  gateway: string,
  timeoutMs: number = gatewayConnectTimeoutMs,
): Promise<void> {
  const separator = gateway.lastIndexOf(':');
  // [::1]:9090 names an IPv6 host in brackets, as gRPC writes it.
  const host = gateway.slice(0, separator).replace(/^\[(.*)\]$/, '$1');
  const port = Number(gateway.slice(separator + 1));
  return new Promise<void>((resolve, reject) => {
    const socket = net.connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new SpoolError(
          CommonErrorCode.Unavailable,
          `the gateway at ${gateway} did not accept a connection within ${timeoutMs} ms`,
          { retriable: true },
        ),
      );
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve();
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(
        new SpoolError(
          CommonErrorCode.Unavailable,
          `cannot reach the gateway at ${gateway}: ${error.message}`,
          { retriable: true, cause: error },
        ),
      );
    });
  });
}

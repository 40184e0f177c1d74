// Ports that stand in for a registered broker's gRPC address in controller tests, for the
// takeover announcement (controller-announcement.ts) to find: a live-looking one that accepts
// connections and answers nothing (what a paused process's kernel does), and one nothing
// listens on (a dead process's). Tests only.
import { createServer, type Socket } from 'node:net';

/** A port that accepts and never answers; `close` drops its connections and stops it. */
export async function silentPort(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A port nothing listens on (bound once, then released): connections to it are refused. */
export async function refusingPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

import * as net from 'node:net';

export interface FreezingRelay {
  /** `127.0.0.1:<port>`: connect here instead of to the target. */
  readonly address: string;
  /** From now on no byte passes either way; both sockets stay open. */
  freeze(): void;
  close(): Promise<void>;
}

/**
 * A TCP relay to `target` (`host:port`) that can freeze: it then stops passing bytes either way
 * and keeps both sockets open, as a paused process or a cut network does (nothing is refused,
 * pings go unanswered). For tests of keepalive and failover.
 */
export async function startFreezingRelay(target: string): Promise<FreezingRelay> {
  const separator = target.lastIndexOf(':');
  const host = target.slice(0, separator);
  const port = Number(target.slice(separator + 1));
  const sockets: net.Socket[] = [];
  let frozen = false;
  const server = net.createServer((inbound) => {
    const outbound = net.connect(port, host);
    sockets.push(inbound, outbound);
    for (const [from, to] of [
      [inbound, outbound],
      [outbound, inbound],
    ] as const) {
      from.on('data', (chunk) => {
        if (!frozen) to.write(chunk);
      });
      from.on('error', () => to.destroy());
      from.on('close', () => to.destroy());
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    freeze: () => {
      frozen = true;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

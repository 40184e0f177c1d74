import net from 'node:net';

/**
 * A TCP proxy that loses answers: every byte from the client reaches the server, but a chunk
 * coming back is, with probability `dropProbability`, not forwarded, and the connection is cut
 * both ways instead. A request the server already acted on then looks failed to the client,
 * which must retry: the way to prove a producer's retries write nothing twice. The decision is
 * drawn from a seeded generator, so a failure can be replayed.
 */
export class ResponseDroppingProxy {
  /** Connections cut with an answer lost. */
  dropped = 0;
  /** Server chunks forwarded to the client. */
  forwarded = 0;
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private state: number;

  private constructor(
    private readonly target: { host: string; port: number },
    private dropProbability: number,
    seed: number,
  ) {
    this.state = seed >>> 0;
    this.server = net.createServer((client) => this.accept(client));
  }

  static async start(
    target: { host: string; port: number },
    options: { dropProbability: number; seed: number },
  ): Promise<ResponseDroppingProxy> {
    const proxy = new ResponseDroppingProxy(target, options.dropProbability, options.seed);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get address(): string {
    return `127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  /** From now on forward everything (the check phase must not be disturbed). */
  stopDropping(): void {
    this.dropProbability = 0;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    const upstream = net.connect(this.target.port, this.target.host);
    this.sockets.add(client).add(upstream);
    const cut = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk) => {
      if (this.next() < this.dropProbability) {
        this.dropped++;
        cut();
        return;
      }
      this.forwarded++;
      client.write(chunk);
    });
    client.on('close', cut);
    upstream.on('close', cut);
    client.on('error', cut);
    upstream.on('error', cut);
  }

  /** mulberry32: a float in [0, 1). */
  private next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let mixed = this.state;
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  }
}

import net from 'node:net';
import { SeededRandom } from './seeded-random';

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
  private readonly random: SeededRandom;

  private constructor(
    private readonly target: { host: string; port: number },
    private dropProbability: number,
    seed: number,
  ) {
    this.random = new SeededRandom(seed);
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
      if (this.random.next() < this.dropProbability) {
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
}

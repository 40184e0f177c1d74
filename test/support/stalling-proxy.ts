import net from 'node:net';

/**
 * A TCP proxy that can stop reading what the server sends, as a client that never reads does:
 * the server's socket buffers fill and its writes stop completing. (A paused grpc-js call is no
 * such client: Node's HTTP/2 keeps taking data and granting window while a stream is paused.)
 */
export class StallingProxy {
  private readonly server: net.Server;
  private readonly upstreams = new Set<net.Socket>();
  private stalled = false;

  private constructor(private readonly target: { host: string; port: number }) {
    this.server = net.createServer((client) => this.accept(client));
  }

  static async start(target: { host: string; port: number }): Promise<StallingProxy> {
    const proxy = new StallingProxy(target);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get address(): string {
    return `127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  /** Stops reading from the server: nothing more reaches the client. */
  stall(): void {
    this.stalled = true;
    for (const upstream of this.upstreams) upstream.pause();
  }

  resume(): void {
    this.stalled = false;
    for (const upstream of this.upstreams) upstream.resume();
  }

  async close(): Promise<void> {
    for (const upstream of this.upstreams) upstream.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    const upstream = net.connect(this.target.port, this.target.host);
    this.upstreams.add(upstream);
    if (this.stalled) upstream.pause();
    client.pipe(upstream);
    upstream.pipe(client);
    const close = (): void => {
      this.upstreams.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  }
}

/**
 * The producers, consumers and admins one `Spool` made and has not seen closed, so that
 * `spool.close()` can close them all. A client leaves the registry when it closes, however it
 * was closed, so a long-lived Spool that makes and closes many clients holds none of them.
 */

export interface ClosableClient {
  close(): Promise<void>;
}

export class ClientRegistry {
  private readonly clients = new Set<ClosableClient>();

  /** Adds a client; the returned function removes it (call it once the client is closed). */
  register(client: ClosableClient): () => void {
    this.clients.add(client);
    return () => void this.clients.delete(client);
  }

  get size(): number {
    return this.clients.size;
  }

  /**
   * Closes every registered client at once (each flushes, commits or leaves as its own close
   * does), waits for all of them, then rejects with the first failure, if any.
   */
  async closeAll(): Promise<void> {
    const outcomes = await Promise.allSettled([...this.clients].map((client) => client.close()));
    const failure = outcomes.find((outcome) => outcome.status === 'rejected');
    if (failure !== undefined) throw (failure as PromiseRejectedResult).reason;
  }
}

/**
 * What `/readyz` and the gRPC health service answer. A service is live as long as it answers at
 * all (`/healthz`); it is ready once every named condition holds — logs opened, metadata loaded,
 * replicas in sync — and stops being ready the moment shutdown begins, so a load balancer or
 * Kubernetes stops sending it work before it stops accepting.
 */
export class Readiness {
  private readonly pending = new Set<string>();
  private shuttingDown = false;
  private readonly listeners: Array<(ready: boolean) => void> = [];

  /** Declares a condition that must be met before the service is ready. */
  require(condition: string): void {
    this.pending.add(condition);
    this.notify();
  }

  /** Marks a condition met (idempotent). */
  satisfy(condition: string): void {
    this.pending.delete(condition);
    this.notify();
  }

  beginShutdown(): void {
    this.shuttingDown = true;
    this.notify();
  }

  isReady(): boolean {
    return !this.shuttingDown && this.pending.size === 0;
  }

  /** Why the service is not ready, for the body of a 503. */
  reasons(): string[] {
    return this.shuttingDown ? ['shutting down'] : [...this.pending].map((c) => `waiting for ${c}`);
  }

  onChange(listener: (ready: boolean) => void): void {
    this.listeners.push(listener);
  }

  private notify(): void {
    const ready = this.isReady();
    for (const listener of this.listeners) listener(ready);
  }
}

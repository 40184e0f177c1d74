/**
 * A queue whose `take` waits for the next item: how the Consume stream's callbacks hand
 * responses, errors and wake-ups to the consumer's pull loop. Unbounded on purpose: what enters
 * it is bounded by the credit the consumer granted, and wake-ups by the calls that make them.
 */
export class AsyncQueue<Item> {
  private readonly items: Item[] = [];
  private readonly takers: ((item: Item) => void)[] = [];

  push(item: Item): void {
    const taker = this.takers.shift();
    if (taker === undefined) this.items.push(item);
    else taker(item);
  }

  take(): Promise<Item> {
    if (this.items.length > 0) return Promise.resolve(this.items.shift()!);
    return new Promise((resolve) => this.takers.push(resolve));
  }

  /** Drops queued items; waiting takers keep waiting. */
  clear(): void {
    this.items.length = 0;
  }

  get size(): number {
    return this.items.length;
  }
}

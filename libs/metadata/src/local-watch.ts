/**
 * Watches of the local store: a bounded history of recent revisions, so a watch can start (or
 * resume) from a past revision, and the watch objects that deliver events.
 *
 * Delivery is asynchronous (a microtask after the write is durable), in revision order, each
 * revision once: a watch is fed its backlog from the history and then every later revision as
 * it commits, all on one thread, so nothing can fall between the two.
 */
import { assert } from '@spool/common';
import type { KeyValue, Watch, WatchEvent, WatchHandlers } from './metadata-store';

interface RevisionEvents {
  readonly revision: bigint;
  readonly events: readonly WatchEvent[];
}

/**
 * The events of the latest `revisionsMax` revisions. Every revision from `compactRevision` to
 * the store's current one is here (a revision is one write, so they are contiguous); a watch must
 * start at `compactRevision` or later, which is etcd's rule for its compact revision.
 */
export class WatchHistory {
  private readonly entries: RevisionEvents[] = [];
  private compactRevisionValue: bigint;

  constructor(
    private readonly revisionsMax: number,
    compactRevision: bigint,
  ) {
    assert(Number.isSafeInteger(revisionsMax), 'revisionsMax is an integer');
    assert(revisionsMax > 0, 'the history keeps at least one revision');
    this.compactRevisionValue = compactRevision;
  }

  /** The oldest revision a watch can start at (its `afterRevision` plus one). */
  get compactRevision(): bigint {
    return this.compactRevisionValue;
  }

  record(revision: bigint, events: readonly WatchEvent[]): void {
    const expected = (this.entries.at(-1)?.revision ?? revision - 1n) + 1n;
    assert(revision === expected, 'the history records every revision, in order');
    this.entries.push({ revision, events });
    if (this.entries.length > this.revisionsMax) this.compact(this.entries[1]!.revision);
  }

  /** Forgets every revision below `revision`. */
  compact(revision: bigint): void {
    if (revision <= this.compactRevisionValue) return;
    this.compactRevisionValue = revision;
    const firstKept = this.entries.findIndex((entry) => entry.revision >= revision);
    this.entries.splice(0, firstKept === -1 ? this.entries.length : firstKept);
  }

  /** The recorded revisions after `afterRevision`, oldest first. */
  after(afterRevision: bigint): readonly RevisionEvents[] {
    const first = this.entries.findIndex((entry) => entry.revision > afterRevision);
    return first === -1 ? [] : this.entries.slice(first);
  }
}

type QueuedDelivery =
  | { readonly kind: 'events'; readonly revision: bigint; readonly events: readonly WatchEvent[] }
  | { readonly kind: 'error'; readonly error: Error };

/**
 * `open`: events are queued as revisions commit. `failing`: an error is queued after the last
 * events, nothing more is. `cancelled`: the owner stopped it; even queued deliveries are dropped.
 */
type LocalWatchState = 'open' | 'failing' | 'cancelled';

export class LocalWatch implements Watch {
  private state: LocalWatchState = 'open';
  private queue: QueuedDelivery[] = [];
  private drainScheduled = false;

  constructor(
    private readonly prefix: string,
    /** Revisions up to this one are not the watch's (it may even be in the future). */
    private readonly afterRevision: bigint,
    private readonly handlers: WatchHandlers,
    private readonly onEnd: (watch: LocalWatch) => void,
  ) {}

  /** Queues the events of one revision that fall under the prefix. */
  deliver(revision: bigint, events: readonly WatchEvent[]): void {
    if (this.state !== 'open' || revision <= this.afterRevision) return;
    const matching = events.filter((event) =>
      (event.kind === 'put' ? event.keyValue.key : event.key).startsWith(this.prefix),
    );
    if (matching.length > 0) {
      this.enqueue({ kind: 'events', revision, events: matching.map(copyEvent) });
    }
  }

  /** Ends the watch with an error, delivered after the events already queued. */
  fail(error: Error): void {
    if (!this.transitionTo(['open'], 'failing')) return;
    this.enqueue({ kind: 'error', error });
  }

  cancel(): Promise<void> {
    this.transitionTo(['open', 'failing'], 'cancelled');
    this.queue = [];
    return Promise.resolve();
  }

  /** Moves to `next` if the watch is in one of `allowedFrom`; leaving `open` ends the watch. */
  private transitionTo(allowedFrom: readonly LocalWatchState[], next: LocalWatchState): boolean {
    if (!allowedFrom.includes(this.state)) return false;
    const previous = this.state;
    this.state = next;
    if (previous === 'open') this.onEnd(this);
    return true;
  }

  private enqueue(delivery: QueuedDelivery): void {
    this.queue.push(delivery);
    if (this.drainScheduled) return;
    this.drainScheduled = true;
    queueMicrotask(() => this.drain());
  }

  private drain(): void {
    this.drainScheduled = false;
    const batch = this.queue;
    this.queue = [];
    for (const delivery of batch) {
      // A handler may cancel the watch; nothing after that is delivered.
      if (this.state === 'cancelled') return;
      if (delivery.kind === 'events') this.handlers.onEvents(delivery.events, delivery.revision);
      else this.handlers.onError(delivery.error);
    }
  }
}

function copyEvent(event: WatchEvent): WatchEvent {
  return event.kind === 'put' ? { kind: 'put', keyValue: copyKeyValue(event.keyValue) } : event;
}

/** A copy the caller may keep or change without touching the store's state. */
export function copyKeyValue(keyValue: KeyValue): KeyValue {
  return { ...keyValue, value: Buffer.from(keyValue.value) };
}

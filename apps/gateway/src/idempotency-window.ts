import { createHash } from 'node:crypto';
import { SpoolError } from '@spool/common';

/**
 * The record-level Publish's deduplication: a client that retries a call (its answer was lost,
 * its deadline passed) sends the same idempotency key again, and the gateway answers from the
 * first call instead of appending the records twice. Kafka's idempotent producer does this with
 * a producer id and sequence numbers, which a client without Kafka's protocol does not have; the
 * key stands for them, per call.
 *
 * Bounded twice: an entry lives windowMs after it was last used, and at most keysMax entries are
 * kept (the oldest go first). A retry after the window, or on another gateway, appends again;
 * the README says so. An entry holds the call's request fingerprint (SHA-256 of what it asked
 * for) and its outcome, so the same key with other records is refused rather than answered with
 * results that do not belong to it.
 */

/** 1 to 128 characters of [A-Za-z0-9._:-]: a UUID, a ULID or a "client:counter" fits. */
const idempotencyKeyPattern = /^[A-Za-z0-9._:-]{1,128}$/;

export function checkIdempotencyKey(key: string): void {
  if (idempotencyKeyPattern.test(key)) return;
  const shown = key.length > 40 ? `${JSON.stringify(key.slice(0, 40))}...` : JSON.stringify(key);
  throw new SpoolError(
    'INVALID_REQUEST',
    `idempotency_key ${shown} (${key.length} characters) is malformed: it must be 1 to 128 ` +
      'characters of A-Z, a-z, 0-9, ".", "_", ":" and "-"',
  );
}

interface Entry<T> {
  readonly fingerprint: string;
  outcome: Promise<T>;
  lastUsedAtMs: number;
}

export class IdempotencyWindow<T> {
  /** Insertion order is use order: a used entry is moved to the end, so the oldest is first. */
  private readonly entries = new Map<string, Entry<T>>();

  constructor(
    private readonly windowMs: number,
    private readonly keysMax: number,
    private readonly nowMs: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /**
   * Runs `first` for a key seen for the first time, or `again(previousOutcome)` for a key seen
   * within the window with the same fingerprint; the same key with another fingerprint fails
   * INVALID_REQUEST. Calls with one key run one after the other: a retry that arrives while the
   * first call is still in flight waits for it.
   */
  run(
    key: string,
    fingerprint: string,
    first: () => Promise<T>,
    again: (previous: T) => Promise<T>,
  ): Promise<T> {
    const now = this.nowMs();
    this.expire(now);
    const existing = this.entries.get(key);
    if (existing !== undefined && existing.fingerprint !== fingerprint) {
      return Promise.reject(
        new SpoolError(
          'INVALID_REQUEST',
          `idempotency_key "${key}" was used within the last ${this.windowMs} ms for other ` +
            'records; a retry must send the same topic, acks and records',
        ),
      );
    }
    const outcome = existing === undefined ? first() : existing.outcome.then(again, () => first());
    this.entries.delete(key);
    this.entries.set(key, { fingerprint, outcome, lastUsedAtMs: now });
    while (this.entries.size > this.keysMax) {
      this.entries.delete(this.entries.keys().next().value!);
    }
    return outcome;
  }

  private expire(now: number): void {
    for (const [key, entry] of this.entries) {
      if (now - entry.lastUsedAtMs < this.windowMs) return;
      this.entries.delete(key);
    }
  }
}

/** SHA-256 over length-prefixed parts, so that ["ab", "c"] and ["a", "bc"] differ. */
export class Fingerprint {
  private readonly hash = createHash('sha256');
  private readonly lengthBytes = Buffer.alloc(4);

  add(part: Buffer | string | undefined): this {
    if (part === undefined) {
      this.lengthBytes.writeInt32BE(-1);
      this.hash.update(this.lengthBytes);
      return this;
    }
    const bytes = typeof part === 'string' ? Buffer.from(part, 'utf8') : part;
    this.lengthBytes.writeInt32BE(bytes.length);
    this.hash.update(this.lengthBytes);
    this.hash.update(bytes);
    return this;
  }

  digest(): string {
    return this.hash.digest('base64');
  }
}

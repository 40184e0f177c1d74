/**
 * A prefix watch on etcd, on its own Watch stream (rather than etcd3's shared WatchManager, whose
 * reconnect resumes from the revision in the last response header and can skip events).
 *
 * 1. The stream asks for every change under the prefix from `nextRevision`, which starts at
 *    `afterRevision + 1` and moves past each revision delivered. etcd sends the events of one
 *    revision in one response, never split, so delivery is per revision.
 * 2. When the stream breaks, it is reopened (the pool picks a reachable endpoint) from
 *    `nextRevision`: nothing is skipped, and revisions below it are dropped if etcd resends them,
 *    so nothing arrives twice.
 * 3. If etcd compacted past `nextRevision`, it cancels the watch with the compact revision:
 *    `onError(WatchCompactedError)`, and the owner re-reads.
 * 4. A watch that cannot be reopened for `watchReconnectMsMax` ends with
 *    METADATA_STORE_UNAVAILABLE: the connection is lost for good, as far as the owner can wait.
 */
import {
  castGrpcError,
  type IDuplexStream,
  type IKeyValue,
  type IWatchRequest,
  type IWatchResponse,
  type WatchClient,
} from 'etcd3';
import { MetadataStoreError, WatchCompactedError } from './errors';
import type { KeyValue, Watch, WatchEvent, WatchHandlers } from './metadata-store';

type WatchStream = IDuplexStream<IWatchRequest, IWatchResponse>;

/** How long a broken watch keeps trying to reopen before it gives up. */
export const watchReconnectMsMax = 30_000;
const reconnectDelayMsMin = 50;
const reconnectDelayMsMax = 1_000;

export class EtcdPrefixWatch implements Watch {
  private nextRevision: bigint;
  private stream: WatchStream | undefined;
  private ended = false;
  private disconnectedAtMs: number | undefined;
  private reconnectDelayMs = reconnectDelayMsMin;
  private reconnectTimer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly watchClient: WatchClient,
    private readonly prefix: string,
    afterRevision: bigint,
    private readonly handlers: WatchHandlers,
    private readonly createTimeoutMs: number,
    private readonly onEnd: (watch: EtcdPrefixWatch) => void,
  ) {
    this.nextRevision = afterRevision + 1n;
  }

  /** Opens the watch; resolves once etcd confirmed it, so later writes are sure to be seen. */
  static async start(
    watchClient: WatchClient,
    prefix: string,
    afterRevision: bigint,
    handlers: WatchHandlers,
    options: { createTimeoutMs: number; onEnd: (watch: EtcdPrefixWatch) => void },
  ): Promise<EtcdPrefixWatch> {
    const watch = new EtcdPrefixWatch(
      watchClient,
      prefix,
      afterRevision,
      handlers,
      options.createTimeoutMs,
      options.onEnd,
    );
    await watch.open();
    return watch;
  }

  async cancel(): Promise<void> {
    this.end();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.reconnectTimer !== undefined) clearTimeout(this.reconnectTimer);
    this.dropStream(this.stream);
    this.onEnd(this);
  }

  private fail(error: Error): void {
    if (this.ended) return;
    this.end();
    this.handlers.onError(error);
  }

  /** Opens a stream from `nextRevision` and waits for etcd's "created" answer. */
  private async open(): Promise<void> {
    const stream = await this.watchClient.watch();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.dropStream(stream);
        reject(
          new MetadataStoreError(
            'METADATA_STORE_UNAVAILABLE',
            `etcd did not confirm a watch on "${this.prefix}" within ${this.createTimeoutMs} ms`,
          ),
        );
      }, this.createTimeoutMs);
      let created = false;
      const broken = (error: Error): void => {
        clearTimeout(timer);
        if (!created) reject(castGrpcError(error));
        else if (stream === this.stream) this.reconnect();
      };
      stream.on('error', broken);
      stream.on('end', () => broken(new Error('etcd ended the watch stream')));
      stream.on('data', (response) => {
        if (!created && response.created) {
          created = true;
          clearTimeout(timer);
          if (response.canceled) {
            reject(canceledError(this.prefix, response));
            return;
          }
          if (this.ended) {
            stream.cancel();
            resolve();
            return;
          }
          this.stream = stream;
          this.disconnectedAtMs = undefined;
          this.reconnectDelayMs = reconnectDelayMsMin;
          resolve();
          return;
        }
        if (stream === this.stream) this.onResponse(response);
      });
      stream.write({
        create_request: {
          ...prefixRange(this.prefix),
          start_revision: this.nextRevision.toString(),
        },
      });
    });
  }

  private onResponse(response: IWatchResponse): void {
    if (response.canceled) {
      const compactRevision = BigInt(response.compact_revision || '0');
      this.fail(
        compactRevision > 0n
          ? new WatchCompactedError(this.nextRevision - 1n, compactRevision)
          : canceledError(this.prefix, response),
      );
      return;
    }
    let revision: bigint | undefined;
    let events: WatchEvent[] = [];
    for (const event of response.events) {
      const eventRevision = BigInt(event.kv.mod_revision);
      if (eventRevision < this.nextRevision) continue; // Step 2: already delivered.
      if (revision !== undefined && eventRevision !== revision) {
        this.deliver(events, revision);
        events = [];
      }
      revision = eventRevision;
      events.push(
        String(event.type).toLowerCase() === 'delete'
          ? { kind: 'delete', key: event.kv.key.toString('utf8'), modRevision: eventRevision }
          : { kind: 'put', keyValue: toKeyValue(event.kv) },
      );
    }
    if (revision !== undefined) this.deliver(events, revision);
  }

  private deliver(events: readonly WatchEvent[], revision: bigint): void {
    if (this.ended) return;
    this.nextRevision = revision + 1n;
    try {
      this.handlers.onEvents(events, revision);
    } catch (error) {
      // A throwing handler is a bug in the owner; crash as an assertion would, outside the stream.
      queueMicrotask(() => {
        throw error;
      });
    }
  }

  /** Step 2 and step 4. */
  private reconnect(): void {
    this.dropStream(this.stream);
    if (this.ended) return;
    this.disconnectedAtMs ??= Date.now();
    if (Date.now() - this.disconnectedAtMs > watchReconnectMsMax) {
      this.fail(
        new MetadataStoreError(
          'METADATA_STORE_UNAVAILABLE',
          `the watch on "${this.prefix}" could not reconnect to etcd for ${watchReconnectMsMax} ms`,
        ),
      );
      return;
    }
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.ended) return;
      this.open().catch(() => this.reconnect());
    }, this.reconnectDelayMs);
    this.reconnectDelayMs = Math.min(reconnectDelayMsMax, this.reconnectDelayMs * 2);
  }

  private dropStream(stream: WatchStream | undefined): void {
    if (stream === undefined) return;
    if (stream === this.stream) this.stream = undefined;
    stream.cancel();
  }
}

export function toKeyValue(kv: IKeyValue): KeyValue {
  return {
    key: kv.key.toString('utf8'),
    value: kv.value,
    createRevision: BigInt(kv.create_revision),
    modRevision: BigInt(kv.mod_revision),
    version: BigInt(kv.version),
    lease: BigInt(kv.lease || '0'),
  };
}

/**
 * etcd's key range for a prefix: from the prefix to the prefix with its last byte below 0xff
 * plus one. The empty prefix is every key: from "\0" (etcd refuses an empty key) to "\0", which
 * etcd reads as "no upper bound".
 */
export function prefixRange(prefix: string): { key: Buffer; range_end: Buffer } {
  const end = Buffer.from(prefix);
  for (let index = end.length - 1; index >= 0; index--) {
    if (end[index]! < 0xff) {
      end[index] = end[index]! + 1;
      return { key: Buffer.from(prefix), range_end: end.subarray(0, index + 1) };
    }
  }
  return {
    key: prefix.length === 0 ? Buffer.from([0]) : Buffer.from(prefix),
    range_end: Buffer.from([0]),
  };
}

function canceledError(prefix: string, response: IWatchResponse): MetadataStoreError {
  return new MetadataStoreError(
    'METADATA_STORE_UNAVAILABLE',
    `etcd canceled the watch on "${prefix}": ${response.cancel_reason || 'no reason given'}`,
  );
}

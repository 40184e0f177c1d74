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
 * 5. A stream on a paused or cut-off member breaks nothing: it is merely silent, and so is a
 *    stream with nothing to report. Every `watchPingIntervalMs` the watch asks etcd for its
 *    progress (a WatchProgressRequest, answered with the member's revision); when nothing at all
 *    has come back within `watchPingTimeoutMs`, the stream is dropped and reopened as in 2, on a
 *    member that answers its health probe (etcd-member-health.ts), after naming the silent member
 *    (`suspectMember`) so the reopened stream goes elsewhere. A standby controller waiting
 *    for the leader's key to go would otherwise wait for as long as the member stays paused.
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
/** Step 5: how often a progress request is sent on an open stream. */
export const watchPingIntervalMs = 500;
/** Step 5: how long a stream may stay silent after a progress request. */
export const watchPingTimeoutMs = 1_500;
/** How long a reopened stream may take to be confirmed (the first open takes the call deadline). */
const reopenTimeoutMs = 1_500;

export class EtcdPrefixWatch implements Watch {
  private nextRevision: bigint;
  private stream: WatchStream | undefined;
  private ended = false;
  private disconnectedAtMs: number | undefined;
  private reconnectDelayMs = reconnectDelayMsMin;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private readonly pingTimer: NodeJS.Timeout;
  /** When the unanswered progress request on the current stream was sent (step 5). */
  private pingSentAtMs: number | undefined;
  /** The member the current stream's answers come from. */
  private streamMemberId: string | undefined;

  private constructor(
    private readonly watchClient: WatchClient,
    private readonly prefix: string,
    afterRevision: bigint,
    private readonly handlers: WatchHandlers,
    private readonly createTimeoutMs: number,
    private readonly onEnd: (watch: EtcdPrefixWatch) => void,
    private readonly suspectMember: (memberId: string | undefined, what: string) => void,
  ) {
    this.nextRevision = afterRevision + 1n;
    this.pingTimer = setInterval(() => this.ping(), watchPingIntervalMs);
    this.pingTimer.unref();
  }

  /** Opens the watch; resolves once etcd confirmed it, so later writes are sure to be seen. */
  static async start(
    watchClient: WatchClient,
    prefix: string,
    afterRevision: bigint,
    handlers: WatchHandlers,
    options: {
      createTimeoutMs: number;
      onEnd: (watch: EtcdPrefixWatch) => void;
      suspectMember?: (memberId: string | undefined, what: string) => void;
    },
  ): Promise<EtcdPrefixWatch> {
    const watch = new EtcdPrefixWatch(
      watchClient,
      prefix,
      afterRevision,
      handlers,
      options.createTimeoutMs,
      options.onEnd,
      options.suspectMember ?? (() => {}),
    );
    try {
      await watch.open(options.createTimeoutMs);
    } catch (error) {
      watch.end();
      throw error;
    }
    return watch;
  }

  async cancel(): Promise<void> {
    this.end();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    clearInterval(this.pingTimer);
    if (this.reconnectTimer !== undefined) clearTimeout(this.reconnectTimer);
    this.dropStream(this.stream);
    this.onEnd(this);
  }

  private fail(error: Error): void {
    if (this.ended) return;
    this.end();
    this.handlers.onError(error);
  }

  /** Step 5. */
  private ping(): void {
    const stream = this.stream;
    if (stream === undefined || this.ended) return;
    if (this.pingSentAtMs === undefined) {
      this.pingSentAtMs = Date.now();
      stream.write({ progress_request: {} });
    } else if (Date.now() - this.pingSentAtMs >= watchPingTimeoutMs) {
      this.suspectMember(this.streamMemberId, `watch on "${this.prefix}"`);
      this.reconnect();
    }
  }

  /** Opens a stream from `nextRevision` and waits for etcd's "created" answer. */
  private async open(timeoutMs: number): Promise<void> {
    const stream = await this.watchClient.watch();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.dropStream(stream);
        reject(
          new MetadataStoreError(
            'METADATA_STORE_UNAVAILABLE',
            `etcd did not confirm a watch on "${this.prefix}" within ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
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
          this.streamMemberId = response.header?.member_id;
          this.pingSentAtMs = undefined;
          this.disconnectedAtMs = undefined;
          this.reconnectDelayMs = reconnectDelayMsMin;
          resolve();
          return;
        }
        if (stream !== this.stream) return;
        this.streamMemberId = response.header?.member_id ?? this.streamMemberId;
        this.pingSentAtMs = undefined;
        this.onResponse(response);
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
      this.open(Math.min(this.createTimeoutMs, reopenTimeoutMs)).catch(() => this.reconnect());
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

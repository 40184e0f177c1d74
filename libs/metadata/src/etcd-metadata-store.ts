/**
 * The `etcd` metadata store: production, replicated, highly available. A thin mapping onto
 * etcd's v3 API through the `etcd3` client's RPC layer:
 *
 *   get, getPrefix        Range (linearizable), with the header revision it was read at
 *   put, delete           Put (with lease), DeleteRange
 *   transaction           Txn: `absent` is version == 0, the revision compares are Create/Mod,
 *                         `value` is Value; put/delete/deletePrefix are RequestOps
 *   watchPrefix           a Watch stream from afterRevision + 1 (etcd-watch.ts)
 *   grantLease            LeaseGrant plus our keepalive loop (etcd-lease.ts)
 *   campaign, leader      the election recipe over these primitives (election.ts)
 *
 * Every unary call has a deadline of `requestTimeoutMs`. Failures become MetadataStoreErrors.
 * Calls and streams skip a member that fails its health probe (etcd-member-health.ts), so a
 * killed, paused or cut-off member costs at most a probe's timeout, not a deadline per call.
 * Reads and lease calls are retried on another endpoint when the failure was the network's;
 * writes are retried only when the request provably never left this process (no connection), so
 * a retry can never apply a write twice; otherwise the caller gets a retriable
 * METADATA_STORE_UNAVAILABLE and must re-read before it writes again, as with any etcd client.
 * One exception, a self-guarded transaction (isSelfGuarded): every key it writes is also one it
 * compares by mod revision or absence. Applied once, its own write fails its compares, so sent
 * again it cannot apply twice, nor late over a newer write. It gets `guardedAttemptMs` per
 * attempt within the same `requestTimeoutMs`, and is sent again when an attempt goes
 * unanswered: etcd drops a proposal in flight to a leader that dies, and the member it was sent to
 * answers nothing until its own timeout (7 s), while a new leader takes office in one or two
 * seconds. (The fault suite: an etcd leader killed during a broker's fence cost the fence 5 s.)
 * A resent transaction that had applied answers `succeeded: false`, as any lost compare race.
 */
import {
  channelCredentialsOf,
  ConfigError,
  sleep,
  TlsMaterial,
  type Logger,
  type TlsFiles,
} from '@spool/common';
import { noop as noRetryPolicy, isBrokenCircuitError } from 'cockatiel';
import {
  ClientClosedError,
  CompareResult,
  CompareTarget,
  Etcd3,
  EtcdLeaseInvalidError,
  GRPCDeadlineExceededError,
  GRPCInvalidArgumentError,
  GRPCOutOfRangeError,
  isRecoverableError,
  SortOrder,
  SortTarget,
  type ICompare,
  type IRequestOp,
} from 'etcd3';
import { campaign, readLeader } from './election';
import { EtcdLease } from './etcd-lease';
import { useChannelCredentials } from './etcd-channel-credentials';
import { EtcdMemberHealth } from './etcd-member-health';
import { EtcdPrefixWatch, prefixRange, toKeyValue } from './etcd-watch';
import { MetadataStoreError } from './errors';
import type {
  CampaignOptions,
  Compare,
  KeyValue,
  Leadership,
  Lease,
  MetadataStore,
  Operation,
  Transaction,
  TransactionResult,
  Watch,
  WatchHandlers,
} from './metadata-store';

/** Deadline of one unary call; a healthy etcd answers in milliseconds, an election takes ~1 s. */
export const requestTimeoutMsDefault = 5_000;
/** Attempts of a call that may be retried (reads, lease calls, writes that never left). */
const requestAttemptsMax = 3;
/**
 * One attempt of a self-guarded transaction: etcd's writes take milliseconds, a few hundred on a
 * loaded machine; a proposal lost with its leader never answers.
 */
export const guardedAttemptMs = 2_000;
const retryDelayMs = 50;
/** The largest response accepted from etcd (a whole-cluster getPrefix), bounded all the same. */
const responseBytesMax = 256 * 1024 * 1024;
/** How long close() waits for etcd to revoke this process's leases. */
const closeRevokeTimeoutMs = 2_000;

export interface EtcdMetadataStoreOptions {
  /** endpoints: etcd client URLs, e.g. ["http://etcd-0.etcd:2379"]. */
  readonly endpoints: readonly string[];
  /** requestTimeoutMs: deadline of one call to etcd. */
  readonly requestTimeoutMs?: number;
  /**
   * TLS to etcd (https:// endpoints): the CA that signed etcd's --cert-file, and this client's
   * certificate and key when etcd requires them (--client-cert-auth with --trusted-ca-file).
   * Checked at connect, then read again every `tlsReloadIntervalMs` (ssl.reload.interval.ms):
   * each new connection to a member uses the latest files that check out
   * (etcd-channel-credentials.ts); connections already open keep theirs.
   */
  readonly tls?: TlsFiles;
  /** How often the TLS files are checked for a change; 0 reads them once. */
  readonly tlsReloadIntervalMs?: number;
  readonly logger?: Logger;
}

export class EtcdMetadataStore implements MetadataStore {
  private readonly leases = new Set<EtcdLease>();
  private readonly watches = new Set<EtcdPrefixWatch>();
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly client: Etcd3,
    private readonly memberHealth: EtcdMemberHealth,
    readonly endpoints: readonly string[],
    private readonly requestTimeoutMs: number,
    private readonly logger: Logger | undefined,
    /** The TLS files, watched for changes until close(); undefined for plaintext etcd. */
    private readonly tlsMaterial: TlsMaterial | undefined,
  ) {}

  /** Connects and checks that etcd answers, so a wrong endpoint fails at start-up. */
  static async connect(options: EtcdMetadataStoreOptions): Promise<EtcdMetadataStore> {
    if (options.endpoints.length === 0) {
      throw new ConfigError('endpoints must list at least one etcd client URL');
    }
    const requestTimeoutMs = options.requestTimeoutMs ?? requestTimeoutMsDefault;
    if (!Number.isSafeInteger(requestTimeoutMs) || requestTimeoutMs <= 0) {
      throw new ConfigError(`requestTimeoutMs must be a positive integer, got ${requestTimeoutMs}`);
    }
    if (options.tls !== undefined && options.tls.caFile === undefined) {
      throw new ConfigError('TLS to etcd needs the CA file that signed its certificate');
    }
    const material =
      options.tls === undefined
        ? undefined
        : TlsMaterial.load(options.tls, {
            ...(options.logger === undefined ? {} : { logger: options.logger }),
            ...(options.tlsReloadIntervalMs === undefined
              ? {}
              : { reloadIntervalMs: options.tlsReloadIntervalMs }),
          });
    const tls = material?.current;
    // etcd3 wants buffers to set its channels up for TLS; useChannelCredentials then puts them
    // on credentials that follow the files.
    const credentials =
      tls === undefined
        ? undefined
        : {
            rootCertificate: tls.caPem ?? Buffer.alloc(0),
            ...(tls.keyPem === undefined ? {} : { privateKey: tls.keyPem }),
            ...(tls.certificateChainPem === undefined
              ? {}
              : { certChain: tls.certificateChainPem }),
          };
    const channelCredentials = material === undefined ? undefined : channelCredentialsOf(material);
    // gRPC's default 4 MiB would cap a getPrefix of a large cluster's partitions.
    const grpcOptions = { 'grpc.max_receive_message_length': responseBytesMax };
    const memberHealth = new EtcdMemberHealth(
      options.endpoints,
      { ...(credentials === undefined ? {} : { credentials }), grpcOptions },
      options.logger,
      channelCredentials,
    );
    const client = new Etcd3({
      hosts: [...options.endpoints],
      ...(credentials === undefined ? {} : { credentials }),
      // Streams (watch, keepalive) live as long as they are used; unary calls get a deadline.
      defaultCallOptions: (context) =>
        context.isStream ? {} : { deadline: Date.now() + requestTimeoutMs },
      // Retries are ours (see the header): the client must not repeat a write on its own. Each
      // member's breaker is opened by its health probes (etcd-member-health.ts).
      faultHandling: {
        global: noRetryPolicy,
        host: (endpoint) => memberHealth.policyFor(endpoint),
      },
      grpcOptions,
    });
    if (channelCredentials !== undefined) useChannelCredentials(client, channelCredentials);
    const store = new EtcdMetadataStore(
      client,
      memberHealth,
      options.endpoints,
      requestTimeoutMs,
      options.logger,
      material,
    );
    try {
      // A read of a range no key of ours falls in: proves an endpoint answers, costs nothing.
      await store.getPrefix('\0');
    } catch (error) {
      memberHealth.close();
      client.close();
      material?.close();
      throw error;
    }
    return store;
  }

  async get(key: string): Promise<KeyValue | undefined> {
    const response = await this.call('get', 'retry', () =>
      this.client.kv.range({ key: Buffer.from(key) }),
    );
    const kv = response.kvs[0];
    return kv === undefined ? undefined : toKeyValue(kv);
  }

  async getPrefix(
    prefix: string,
  ): Promise<{ readonly entries: readonly KeyValue[]; readonly revision: bigint }> {
    const response = await this.call('getPrefix', 'retry', () =>
      this.client.kv.range({
        ...prefixRange(prefix),
        sort_order: SortOrder.Ascend,
        sort_target: SortTarget.Key,
      }),
    );
    return { entries: response.kvs.map(toKeyValue), revision: BigInt(response.header.revision) };
  }

  async put(key: string, value: Buffer, options: { lease?: bigint } = {}): Promise<bigint> {
    const response = await this.call('put', 'write', () =>
      this.client.kv.put({ key: Buffer.from(key), value, lease: String(options.lease ?? 0n) }),
    );
    return BigInt(response.header.revision);
  }

  async delete(key: string): Promise<bigint> {
    const response = await this.call('delete', 'write', () =>
      this.client.kv.deleteRange({ key: Buffer.from(key) }),
    );
    return BigInt(response.header.revision);
  }

  async transaction(transaction: Transaction): Promise<TransactionResult> {
    const request = {
      compare: transaction.compares.map(toEtcdCompare),
      success: transaction.success.map(toEtcdOperation),
      failure: (transaction.failure ?? []).map(toEtcdOperation),
    };
    const response = isSelfGuarded(transaction)
      ? await this.guardedCall('transaction', (deadline) =>
          this.client.kv.txn(request, { deadline }),
        )
      : await this.call('transaction', 'write', () => this.client.kv.txn(request));
    return { succeeded: response.succeeded, revision: BigInt(response.header.revision) };
  }

  /**
   * A call that may be sent again after any network failure or unanswered attempt (see the
   * header): attempts of at most `guardedAttemptMs` until `requestTimeoutMs` has passed.
   */
  private async guardedCall<T>(what: string, run: (deadline: Date) => Promise<T>): Promise<T> {
    if (this.closing !== undefined) {
      throw new MetadataStoreError('METADATA_STORE_CLOSED', 'the etcd metadata store is closed');
    }
    const giveUpAtMs = Date.now() + this.requestTimeoutMs;
    for (let attempt = 1; ; attempt++) {
      const deadlineMs = Math.min(Date.now() + guardedAttemptMs, giveUpAtMs);
      try {
        return await run(new Date(deadlineMs));
      } catch (error) {
        const retriable = isNetworkFailure(error) || error instanceof GRPCDeadlineExceededError;
        if (!retriable || Date.now() + retryDelayMs >= giveUpAtMs || this.closing !== undefined) {
          throw this.toMetadataStoreError(what, error);
        }
        this.logger?.warn(
          { err: error, attempt },
          `etcd ${what} unanswered or refused; sending it again (it compares every key it writes)`,
        );
        await sleep(retryDelayMs);
      }
    }
  }

  async watchPrefix(
    prefix: string,
    afterRevision: bigint,
    handlers: WatchHandlers,
  ): Promise<Watch> {
    const watch = await this.call('watchPrefix', 'retry', () =>
      EtcdPrefixWatch.start(this.client.watchClient, prefix, afterRevision, handlers, {
        createTimeoutMs: this.requestTimeoutMs,
        onEnd: (ended) => this.watches.delete(ended),
        suspectMember: (memberId, what) => this.memberHealth.suspect(memberId, what),
      }),
    );
    this.watches.add(watch);
    return watch;
  }

  /** etcd counts lease TTLs in whole seconds (and may raise a short one); ttlMs rounds up. */
  async grantLease(ttlMs: number): Promise<Lease> {
    if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0) {
      throw new MetadataStoreError(
        'METADATA_STORE_INVALID_REQUEST',
        `lease TTL must be a positive integer of milliseconds, got ${ttlMs}`,
      );
    }
    const sentAtMs = Date.now();
    const response = await this.call('grantLease', 'retry', () =>
      this.client.leaseClient.leaseGrant({ TTL: Math.ceil(ttlMs / 1000) }),
    );
    const lease = new EtcdLease(
      this.client.leaseClient,
      BigInt(response.ID),
      Number(response.TTL),
      sentAtMs,
      (id) => this.revokeLease(id),
      (ended) => this.leases.delete(ended),
      (memberId, what) => this.memberHealth.suspect(memberId, what),
    );
    if (this.closing !== undefined) {
      // close() began during the grant and will not see this lease: end it here.
      await lease.revoke().catch(() => undefined);
      throw new MetadataStoreError('METADATA_STORE_CLOSED', 'the etcd metadata store is closed');
    }
    this.leases.add(lease);
    return lease;
  }

  campaign(electionPrefix: string, options: CampaignOptions): Promise<Leadership> {
    return campaign(this, electionPrefix, options);
  }

  leader(electionPrefix: string): Promise<{ candidate: string; fencingToken: bigint } | undefined> {
    return readLeader(this, electionPrefix);
  }

  /** Compacts etcd's history below `revision` (physically), as an operator would. */
  async compact(revision: bigint): Promise<void> {
    await this.call('compact', 'write', () =>
      this.client.kv.compact({ revision: revision.toString(), physical: true }),
    );
  }

  /**
   * Ends the watches, revokes this process's leases (so their keys vanish now, not a TTL later,
   * and a standby takes over at once), and closes the connections.
   */
  close(): Promise<void> {
    this.closing ??= this.closeOnce();
    return this.closing;
  }

  private async closeOnce(): Promise<void> {
    for (const watch of [...this.watches]) await watch.cancel();
    const revocations = Promise.allSettled([...this.leases].map((lease) => lease.revoke()));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      revocations,
      new Promise((resolve) => (timer = setTimeout(resolve, closeRevokeTimeoutMs))),
    ]);
    clearTimeout(timer);
    this.memberHealth.close();
    this.client.close();
    this.tlsMaterial?.close();
  }

  private async revokeLease(id: bigint): Promise<void> {
    try {
      await this.call('revokeLease', 'retry', () =>
        this.client.leaseClient.leaseRevoke({ ID: id.toString() }),
      );
    } catch (error) {
      // Already gone (expired, or revoked elsewhere): what revoking wanted.
      if (!(error instanceof MetadataStoreError && error.code === 'LEASE_LOST')) throw error;
    }
  }

  /**
   * Runs one call to etcd, retrying as the header says, and turns failures into
   * MetadataStoreErrors. `retry`: safe to repeat; `write`: repeated only if it never left.
   */
  private async call<T>(what: string, kind: 'retry' | 'write', run: () => Promise<T>): Promise<T> {
    if (this.closing !== undefined && what !== 'revokeLease') {
      throw new MetadataStoreError('METADATA_STORE_CLOSED', 'the etcd metadata store is closed');
    }
    for (let attempt = 1; ; attempt++) {
      try {
        return await run();
      } catch (error) {
        const retriable = kind === 'retry' ? isNetworkFailure(error) : neverSent(error);
        if (!retriable || attempt >= requestAttemptsMax || this.closing !== undefined) {
          throw this.toMetadataStoreError(what, error);
        }
        this.logger?.debug({ err: error, attempt }, `etcd ${what} failed; retrying`);
        await sleep(retryDelayMs * attempt);
      }
    }
  }

  private toMetadataStoreError(what: string, error: unknown): MetadataStoreError {
    if (error instanceof MetadataStoreError) return error;
    const message = error instanceof Error ? error.message : String(error);
    const options = { cause: error };
    if (error instanceof EtcdLeaseInvalidError) {
      return new MetadataStoreError('LEASE_LOST', `etcd ${what}: ${message}`, options);
    }
    if (error instanceof GRPCInvalidArgumentError || error instanceof GRPCOutOfRangeError) {
      return new MetadataStoreError(
        'METADATA_STORE_INVALID_REQUEST',
        `etcd ${what}: ${message}`,
        options,
      );
    }
    if (error instanceof ClientClosedError) {
      return new MetadataStoreError('METADATA_STORE_CLOSED', `etcd ${what}: ${message}`, options);
    }
    return new MetadataStoreError(
      'METADATA_STORE_UNAVAILABLE',
      `etcd ${what} failed against ${this.endpoints.join(',')}: ${message}`,
      options,
    );
  }
}

function isNetworkFailure(error: unknown): boolean {
  return (error instanceof Error && isRecoverableError(error)) || isBrokenCircuitError(error);
}

/**
 * Whether a failed call provably never reached etcd: no connection could be made, or every
 * endpoint's circuit breaker refused it. Only then may a write be repeated.
 */
/**
 * Whether every key the transaction writes is compared by mod revision or absence, so that once
 * applied it cannot apply again. A prefix delete names no key; a failure branch writes whatever
 * the compares say, so neither is.
 */
export function isSelfGuarded(transaction: Transaction): boolean {
  if ((transaction.failure ?? []).length > 0 || transaction.success.length === 0) return false;
  const guardedKeys = new Set(
    transaction.compares
      .filter((compare) => compare.kind === 'modRevision' || compare.kind === 'absent')
      .map((compare) => compare.key),
  );
  return transaction.success.every(
    (operation) => operation.kind !== 'deletePrefix' && guardedKeys.has(operation.key),
  );
}

function neverSent(error: unknown): boolean {
  if (isBrokenCircuitError(error)) return true;
  return (
    error instanceof Error &&
    isRecoverableError(error) &&
    /No connection established|ECONNREFUSED/.test(error.message)
  );
}

function toEtcdCompare(compare: Compare): ICompare {
  const key = Buffer.from(compare.key);
  switch (compare.kind) {
    case 'absent':
      return { key, target: CompareTarget.Version, result: CompareResult.Equal, version: 0 };
    case 'createRevision':
      return {
        key,
        target: CompareTarget.Create,
        result: CompareResult.Equal,
        create_revision: compare.equals.toString(),
      };
    case 'modRevision':
      return {
        key,
        target: CompareTarget.Mod,
        result: CompareResult.Equal,
        mod_revision: compare.equals.toString(),
      };
    case 'value':
      return {
        key,
        target: CompareTarget.Value,
        result: CompareResult.Equal,
        value: compare.equals,
      };
  }
}

function toEtcdOperation(operation: Operation): IRequestOp {
  switch (operation.kind) {
    case 'put':
      return {
        request_put: {
          key: Buffer.from(operation.key),
          value: operation.value,
          lease: String(operation.lease ?? 0n),
        },
      };
    case 'delete':
      return { request_delete_range: { key: Buffer.from(operation.key) } };
    case 'deletePrefix':
      return { request_delete_range: prefixRange(operation.prefix) };
  }
}

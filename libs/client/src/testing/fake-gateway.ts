import * as grpc from '@grpc/grpc-js';
import { SpoolError, toGrpcStatus } from '@spool/common';
import {
  GatewayServiceService,
  OffsetSpec,
  type ConsumeRequest,
  type ConsumeResponse,
  type ConsumerGroupHeartbeatRequest,
  type OffsetCommitRequest,
  type OffsetFetchRequest,
  type ResetOffsetsRequest,
  type FetchPartition,
  type FetchedPartition,
  type InitProducerIdRequest,
  type InitProducerIdResponse,
  type ProduceRequest,
  type ProduceResponse,
  type ProduceStreamRequest,
  type ProduceStreamResponse,
  type ProtoError,
  type TopicMetadata,
} from '@spool/protocol';
import {
  RecordBatchHeader,
  encodeRecordBatch,
  setBaseOffset,
  incrementSequence,
  type RecordInput,
} from '@spool/record-batch';
import { FakeCoordinator, type FakeLogView } from './fake-coordinator';

/**
 * A test double of the gateway for the SDK's unit tests: a real grpc-js server on 127.0.0.1,
 * port 0, serving GatewayService from in-memory logs. It implements what the SDK calls (Produce,
 * Consume with credit, DescribeTopics, ListTopics, ListOffsets, CreateTopics, DeleteTopics) as
 * the proto contract describes them, and records what it saw: every Produce request, how often
 * topics were described, and per Consume stream the credit granted and the bytes sent. Hooks
 * inject errors and hold Produce answers back. The group calls (ConsumerGroupHeartbeat,
 * OffsetCommit, OffsetFetch, ListGroups, DescribeGroup, DeleteGroup, ResetOffsets) go to an
 * in-memory coordinator (`coordinator`, see fake-coordinator.ts) that reads these logs. It is not
 * the gateway: no routing, no replication.
 *
 * Idempotent producers: InitProducerId hands out ids from 1000 (epoch + 1 for a known id), and
 * each partition checks producer epochs and sequences as a leader does (the last five batches
 * per producer: a retry is answered with its original offsets and not written again; a gap is
 * OUT_OF_ORDER_SEQUENCE_NUMBER, a stale epoch INVALID_PRODUCER_EPOCH, an unknown producer past
 * sequence 0 UNKNOWN_PRODUCER_ID). `produceAnswerHook` replaces the answer of a batch that WAS
 * written (a response lost on the way back); `forgetProducers` and `setProducerState` play a
 * leader that expired or lost state.
 */

/** What a partition remembers of one idempotent producer. */
export interface FakeProducerState {
  producerEpoch: number;
  batches: { baseSequence: number; lastSequence: number; baseOffset: bigint; lastOffset: bigint }[];
}

interface PartitionLog {
  logStartOffset: bigint;
  nextOffset: bigint;
  readonly batches: { baseOffset: bigint; lastOffset: bigint; bytes: Buffer }[];
  readonly producers: Map<bigint, FakeProducerState>;
}

export interface ConsumeStreamRecord {
  readonly partitions: FetchPartition[];
  grantedCreditBytes: number;
  sentBytes: number;
  /** Credit granted after the first message: re-grants as the client consumed. */
  regrantCount: number;
  ended: boolean;
  /** How the stream ended: the client half-closed it, cancelled it, or it failed. */
  endedBy?: 'client-end' | 'cancelled' | 'error';
}

export type ProduceErrorHook = (
  topic: string,
  partition: number,
  attempt: number,
) => ProtoError | undefined;

export class FakeGateway {
  readonly produceRequests: ProduceRequest[] = [];
  readonly consumeStreams: ConsumeStreamRecord[] = [];
  readonly coordinator: FakeCoordinator;
  describeTopicsCalls = 0;
  /** Returns an error to answer for a partition's batch instead of appending it. */
  produceErrorHook: ProduceErrorHook | undefined;
  /** Returns an error to answer for a partition's batch after appending it (a lost answer). */
  produceAnswerHook: ProduceErrorHook | undefined;
  readonly initProducerIdRequests: InitProducerIdRequest[] = [];
  /** Returns an error to answer InitProducerId with instead of an id. */
  initProducerIdHook: (() => SpoolError | undefined) | undefined;
  private nextProducerId = 1000n;
  /** When set, a Consume stream the client half-closes stays open (a stuck gateway). */
  ignoreConsumeEnd = false;
  /** Consume calls still to fail, each with this error, before streams work. */
  private consumeFailures: { remaining: number; error: SpoolError } = {
    remaining: 0,
    error: new SpoolError('UNAVAILABLE', 'unset'),
  };
  private produceGate: Promise<void> | undefined;
  private openProduceGate: (() => void) | undefined;
  private readonly topics = new Map<string, PartitionLog[]>();
  private readonly produceAttempts = new Map<string, number>();
  private readonly dataListeners = new Set<() => void>();

  private constructor(
    private readonly server: grpc.Server,
    readonly address: string,
  ) {
    this.coordinator = new FakeCoordinator(this.logView());
  }

  /** What the coordinator reads of the logs: partition counts, offsets, timestamps. */
  private logView(): FakeLogView {
    return {
      partitionCount: (topic) => this.topics.get(topic)?.length,
      topicNames: () => [...this.topics.keys()],
      logStartOffset: (topic, partition) => this.logOf(topic, partition)?.logStartOffset ?? -1n,
      highWatermark: (topic, partition) => this.logOf(topic, partition)?.nextOffset ?? -1n,
      offsetForTimestamp: (topic, partition, timestampMs) =>
        this.offsetForTimestamp(topic, partition, timestampMs),
    };
  }

  /** The first batch whose max timestamp reaches `timestampMs` (batch granularity); -1n. */
  private offsetForTimestamp(topic: string, partition: number, timestampMs: bigint): bigint {
    const log = this.logOf(topic, partition);
    for (const batch of log?.batches ?? []) {
      if (new RecordBatchHeader(batch.bytes, 0).maxTimestampMs >= timestampMs) {
        return batch.baseOffset < log!.logStartOffset ? log!.logStartOffset : batch.baseOffset;
      }
    }
    return -1n;
  }

  /** ProduceStream calls opened so far. */
  produceStreamsOpened = 0;
  /** ProduceStream calls the client cancelled or ended so far. */
  produceStreamsClosed = 0;

  /**
   * `produceStream: false` plays a gateway from before ProduceStream: the call is UNIMPLEMENTED
   * and the SDK must produce with unary calls.
   */
  static async start(
    topics: Readonly<Record<string, number>> = {},
    options: { produceStream?: boolean } = {},
  ): Promise<FakeGateway> {
    const server = new grpc.Server();
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
    const gateway = new FakeGateway(server, `127.0.0.1:${port}`);
    for (const [name, partitionCount] of Object.entries(topics)) {
      gateway.createTopic(name, partitionCount);
    }
    const implementation = gateway.implementation();
    if (options.produceStream === false) delete implementation.produceStream;
    server.addService(GatewayServiceService, implementation);
    return gateway;
  }

  /** Makes the next `count` Consume calls fail with `error` once they subscribe. */
  failConsumeStreams(count: number, error: SpoolError): void {
    this.consumeFailures = { remaining: count, error };
  }

  /** Holds every Produce answer back until `releaseProduce`. */
  holdProduce(): void {
    this.produceGate ??= new Promise((resolve) => (this.openProduceGate = resolve));
  }

  releaseProduce(): void {
    this.openProduceGate?.();
    this.produceGate = undefined;
    this.openProduceGate = undefined;
  }

  async stop(): Promise<void> {
    this.releaseProduce();
    this.server.forceShutdown();
  }

  createTopic(name: string, partitionCount: number): void {
    this.topics.set(
      name,
      Array.from({ length: partitionCount }, () => ({
        logStartOffset: 0n,
        nextOffset: 0n,
        batches: [],
        producers: new Map<bigint, FakeProducerState>(),
      })),
    );
  }

  /** Starts an empty partition's log at `offset`, as if earlier records were deleted. */
  setLogStartOffset(topic: string, partition: number, offset: bigint): void {
    const log = this.logOf(topic, partition)!;
    log.logStartOffset = offset;
    log.nextOffset = offset;
  }

  /** Appends one batch of `records` directly, as a producer elsewhere would have. */
  appendBatch(topic: string, partition: number, records: readonly RecordInput[]): bigint {
    return this.append(topic, partition, encodeRecordBatch({ baseOffset: 0n, records }));
  }

  /** A partition's batches as stored, base offsets assigned. */
  storedBatches(topic: string, partition: number): Buffer[] {
    return this.logOf(topic, partition)!.batches.map((batch) => batch.bytes);
  }

  /** The partition's state of an idempotent producer, as its leader would keep it. */
  producerState(
    topic: string,
    partition: number,
    producerId: bigint,
  ): FakeProducerState | undefined {
    return this.logOf(topic, partition)!.producers.get(producerId);
  }

  /** Replaces (or with undefined, forgets) what the partition knows of a producer. */
  setProducerState(
    topic: string,
    partition: number,
    producerId: bigint,
    state: FakeProducerState | undefined,
  ): void {
    const producers = this.logOf(topic, partition)!.producers;
    if (state === undefined) producers.delete(producerId);
    else producers.set(producerId, state);
  }

  private logOf(topic: string, partition: number): PartitionLog | undefined {
    return this.topics.get(topic)?.[partition];
  }

  /** Appends concatenated batches, assigning offsets; returns the first batch's base offset. */
  private append(topic: string, partition: number, records: Buffer): bigint {
    const log = this.logOf(topic, partition)!;
    const firstBaseOffset = log.nextOffset;
    let position = 0;
    while (position < records.length) {
      const header = new RecordBatchHeader(records, position);
      const bytes = Buffer.from(records.subarray(position, position + header.sizeBytes));
      setBaseOffset(bytes, 0, log.nextOffset);
      const lastOffset = log.nextOffset + BigInt(header.lastOffsetDelta);
      log.batches.push({ baseOffset: log.nextOffset, lastOffset, bytes });
      log.nextOffset = lastOffset + 1n;
      position += header.sizeBytes;
    }
    for (const listener of this.dataListeners) listener();
    return firstBaseOffset;
  }

  private implementation(): grpc.UntypedServiceImplementation {
    return {
      produce: (
        call: grpc.ServerUnaryCall<ProduceRequest, ProduceResponse>,
        callback: grpc.sendUnaryData<ProduceResponse>,
      ) => {
        this.produceRequests.push(call.request);
        void (this.produceGate ?? Promise.resolve()).then(() =>
          callback(null, this.produce(call.request)),
        );
      },
      produceStream: (
        call: grpc.ServerDuplexStream<ProduceStreamRequest, ProduceStreamResponse>,
      ) => {
        this.produceStreamsOpened += 1;
        call.on('data', (request: ProduceStreamRequest) => {
          this.produceRequests.push(request);
          void (this.produceGate ?? Promise.resolve()).then(() => {
            if (call.cancelled) return;
            const { results } = this.produce(request);
            call.write({ correlationId: request.correlationId, results });
          });
        });
        let closed = false;
        const onClosed = (): void => {
          if (!closed) this.produceStreamsClosed += 1;
          closed = true;
        };
        call.on('end', () => {
          onClosed();
          call.end();
        });
        call.on('cancelled', onClosed);
      },
      initProducerId: unary((request: InitProducerIdRequest): InitProducerIdResponse => {
        this.initProducerIdRequests.push(request);
        const refusal = this.initProducerIdHook?.();
        // As the gateway does: no coordinator to ask is an answer, anything else a failed call.
        if (refusal?.code === 'COORDINATOR_NOT_AVAILABLE') {
          return {
            error: { code: refusal.code, message: refusal.message, retriable: refusal.retriable },
            producerId: -1n,
            producerEpoch: -1,
          };
        }
        if (refusal !== undefined) throw refusal;
        if (request.producerId === -1n) {
          const producerId = this.nextProducerId;
          this.nextProducerId += 1n;
          return { error: undefined, producerId, producerEpoch: 0 };
        }
        return {
          error: undefined,
          producerId: request.producerId,
          producerEpoch: request.producerEpoch + 1,
        };
      }),
      describeTopics: unary((request: { names: string[] }) => {
        this.describeTopicsCalls += 1;
        return {
          topics: request.names.map((name) =>
            this.topics.has(name)
              ? { error: undefined, topic: this.metadataOf(name), cleanerStates: [] }
              : { error: unknownTopic(name), topic: undefined, cleanerStates: [] },
          ),
        };
      }),
      listTopics: unary(() => ({ names: [...this.topics.keys()] })),
      listOffsets: unary(
        (request: {
          partitions: { topic: string; partition: number; spec: OffsetSpec; timestampMs: bigint }[];
        }) => ({
          results: request.partitions.map(({ topic, partition, spec, timestampMs }) => {
            const log = this.logOf(topic, partition);
            const base = { topic, partition, timestampMs: -1n, leaderEpoch: 0 };
            if (log === undefined) return { ...base, error: unknownTopic(topic), offset: -1n };
            const offset =
              spec === OffsetSpec.OFFSET_SPEC_EARLIEST
                ? log.logStartOffset
                : spec === OffsetSpec.OFFSET_SPEC_TIMESTAMP
                  ? this.offsetForTimestamp(topic, partition, timestampMs)
                  : log.nextOffset;
            return { ...base, error: undefined, offset };
          }),
        }),
      ),
      consumerGroupHeartbeat: unary((request: ConsumerGroupHeartbeatRequest) =>
        this.coordinator.heartbeat(request),
      ),
      offsetCommit: unary((request: OffsetCommitRequest) => this.coordinator.offsetCommit(request)),
      offsetFetch: unary((request: OffsetFetchRequest) => this.coordinator.offsetFetch(request)),
      listGroups: unary(() => this.coordinator.listGroups()),
      describeGroup: unary((request: { groupId: string }) =>
        this.coordinator.describeGroup(request.groupId),
      ),
      deleteGroup: unary((request: { groupId: string }) =>
        this.coordinator.deleteGroup(request.groupId),
      ),
      resetOffsets: unary((request: ResetOffsetsRequest) => this.coordinator.resetOffsets(request)),
      createTopics: unary((request: { topics: { name: string; numPartitions: number }[] }) => ({
        results: request.topics.map(({ name, numPartitions }) => {
          if (this.topics.has(name)) {
            return {
              name,
              topicId: '',
              error: { code: 'TOPIC_ALREADY_EXISTS', message: `${name} exists`, retriable: false },
            };
          }
          if (numPartitions === 0) {
            return {
              name,
              topicId: '',
              error: { code: 'INVALID_PARTITIONS', message: 'needs partitions', retriable: false },
            };
          }
          this.createTopic(name, numPartitions === -1 ? 1 : numPartitions);
          return { name, topicId: `id-${name}`, error: undefined };
        }),
      })),
      deleteTopics: unary((request: { names: string[] }) => ({
        results: request.names.map((name) => ({
          name,
          topicId: '',
          error: this.topics.delete(name) ? undefined : unknownTopic(name),
        })),
      })),
      consume: (call: grpc.ServerDuplexStream<ConsumeRequest, ConsumeResponse>) =>
        this.consume(call),
    };
  }

  private produce(request: ProduceRequest): ProduceResponse {
    return {
      results: request.partitions.map(({ topic, partition, records }) => {
        const key = `${topic}/${partition}`;
        const attempt = (this.produceAttempts.get(key) ?? 0) + 1;
        this.produceAttempts.set(key, attempt);
        const result = {
          topic,
          partition,
          baseOffset: -1n,
          lastOffset: -1n,
          logAppendTimeMs: -1n,
          logStartOffset: 0n,
        };
        const log = this.logOf(topic, partition);
        const error =
          log === undefined
            ? unknownTopic(topic)
            : this.produceErrorHook?.(topic, partition, attempt);
        if (error !== undefined) return { ...result, error };
        const check = checkProducer(log!, new RecordBatchHeader(records, 0));
        if ('error' in check) return { ...result, error: check.error };
        if ('duplicate' in check) return { ...result, error: undefined, ...check.duplicate };
        const baseOffset = this.append(topic, partition, records);
        const lastOffset = log!.nextOffset - 1n;
        check.remember?.(baseOffset, lastOffset);
        const lostAnswer = this.produceAnswerHook?.(topic, partition, attempt);
        if (lostAnswer !== undefined) return { ...result, error: lostAnswer };
        return { ...result, error: undefined, baseOffset, lastOffset };
      }),
    };
  }

  /**
   * Consume as the contract says: the first message subscribes and grants credit, later ones
   * add credit; whole batches go out while credit is left (a batch may start before the fetch
   * offset; at least one batch per response, never more than partitionMaxBytes beyond that).
   */
  private consume(call: grpc.ServerDuplexStream<ConsumeRequest, ConsumeResponse>): void {
    const record: ConsumeStreamRecord = {
      partitions: [],
      grantedCreditBytes: 0,
      sentBytes: 0,
      regrantCount: 0,
      ended: false,
    };
    this.consumeStreams.push(record);
    const positions = new Map<string, FetchPartition>();
    let creditBytes = 0;
    const pump = (): void => {
      if (record.ended) return;
      for (const fetch of positions.values()) {
        if (creditBytes <= 0) return;
        const fetched = this.fetch(fetch, creditBytes);
        if (fetched === undefined) continue;
        if (fetched.error !== undefined) positions.delete(`${fetch.topic}/${fetch.partition}`);
        creditBytes -= fetched.records.length;
        record.sentBytes += fetched.records.length;
        call.write({ partitions: [fetched] });
      }
    };
    const end = (by: NonNullable<ConsumeStreamRecord['endedBy']>): void => {
      if (!record.ended) record.endedBy = by;
      record.ended = true;
      this.dataListeners.delete(pump);
    };
    call.on('data', (request: ConsumeRequest) => {
      if (this.consumeFailures.remaining > 0) {
        this.consumeFailures.remaining -= 1;
        end('error');
        call.emit('error', toGrpcStatus(this.consumeFailures.error));
        return;
      }
      if (record.partitions.length === 0 && request.partitions.length > 0) {
        record.partitions.push(...request.partitions);
        for (const fetch of request.partitions) {
          positions.set(`${fetch.topic}/${fetch.partition}`, { ...fetch });
        }
      } else {
        record.regrantCount += 1;
      }
      creditBytes += Number(request.creditBytes);
      record.grantedCreditBytes += Number(request.creditBytes);
      pump();
    });
    call.on('end', () => {
      // A gateway that is stuck keeps the stream open after the client half-closed it.
      if (this.ignoreConsumeEnd) return;
      end('client-end');
      call.end();
    });
    call.on('cancelled', () => end('cancelled'));
    call.on('error', () => end('error'));
    this.dataListeners.add(pump);
  }

  /** Batches at the fetch offset within the limits, advancing it; undefined if none yet. */
  private fetch(fetch: FetchPartition, creditBytes: number): FetchedPartition | undefined {
    const log = this.logOf(fetch.topic, fetch.partition);
    const base = {
      topic: fetch.topic,
      partition: fetch.partition,
      highWatermark: log?.nextOffset ?? -1n,
      logStartOffset: log?.logStartOffset ?? -1n,
    };
    if (log === undefined)
      return { ...base, error: unknownTopic(fetch.topic), records: Buffer.alloc(0) };
    if (fetch.fetchOffset < log.logStartOffset || fetch.fetchOffset > log.nextOffset) {
      return {
        ...base,
        records: Buffer.alloc(0),
        error: {
          code: 'OFFSET_OUT_OF_RANGE',
          message: `offset ${fetch.fetchOffset} is outside [${log.logStartOffset}, ${log.nextOffset}]`,
          retriable: false,
        },
      };
    }
    const limitBytes = Math.min(creditBytes, fetch.partitionMaxBytes);
    const chosen: Buffer[] = [];
    let sizeBytes = 0;
    for (const batch of log.batches) {
      if (batch.lastOffset < fetch.fetchOffset) continue;
      if (chosen.length > 0 && sizeBytes + batch.bytes.length > limitBytes) break;
      chosen.push(batch.bytes);
      sizeBytes += batch.bytes.length;
      fetch.fetchOffset = batch.lastOffset + 1n;
    }
    if (chosen.length === 0) return undefined;
    return { ...base, error: undefined, records: Buffer.concat(chosen) };
  }

  private metadataOf(name: string): TopicMetadata {
    return {
      name,
      topicId: `id-${name}`,
      internal: false,
      configs: [],
      partitions: this.topics.get(name)!.map((_, partition) => ({
        topic: name,
        partition,
        leaderId: 1,
        leaderEpoch: 0,
        replicas: [1],
        isr: [1],
        partitionEpoch: 0,
        offline: false,
        addingReplicas: [],
        removingReplicas: [],
      })),
    };
  }
}

/**
 * A leader's producer checks for the (single) batch of a request: refused, a duplicate with
 * its original offsets, or new (with what to remember once written).
 */
function checkProducer(
  log: PartitionLog,
  header: RecordBatchHeader,
):
  | { error: ProtoError }
  | { duplicate: { baseOffset: bigint; lastOffset: bigint } }
  | { remember?: (baseOffset: bigint, lastOffset: bigint) => void } {
  const producerId = header.producerId;
  if (producerId < 0n) return {};
  const refuse = (code: string, message: string) => ({
    error: { code, message, retriable: false },
  });
  const epoch = header.producerEpoch;
  const known = log.producers.get(producerId);
  const remember = (baseOffset: bigint, lastOffset: bigint): void => {
    const batches = known !== undefined && known.producerEpoch === epoch ? known.batches : [];
    const entry = { baseSequence: header.baseSequence, lastSequence: header.lastSequence };
    log.producers.set(producerId, {
      producerEpoch: epoch,
      batches: [...batches, { ...entry, baseOffset, lastOffset }].slice(-5),
    });
  };
  if (known === undefined) {
    if (header.baseSequence === 0) return { remember };
    return refuse('UNKNOWN_PRODUCER_ID', `producer ${producerId} is not known`);
  }
  if (epoch < known.producerEpoch) {
    return refuse('INVALID_PRODUCER_EPOCH', `epoch ${epoch} < ${known.producerEpoch}`);
  }
  if (epoch > known.producerEpoch) {
    if (header.baseSequence === 0) return { remember };
    return refuse('OUT_OF_ORDER_SEQUENCE_NUMBER', `new epoch ${epoch} must start at 0`);
  }
  const original = known.batches.find(
    (batch) =>
      batch.baseSequence === header.baseSequence && batch.lastSequence === header.lastSequence,
  );
  if (original !== undefined) {
    return { duplicate: { baseOffset: original.baseOffset, lastOffset: original.lastOffset } };
  }
  const latest = known.batches.at(-1);
  const expected = latest === undefined ? 0 : incrementSequence(latest.lastSequence, 1);
  if (header.baseSequence !== expected) {
    return refuse(
      'OUT_OF_ORDER_SEQUENCE_NUMBER',
      `expected sequence ${expected}, got ${header.baseSequence}`,
    );
  }
  return { remember };
}

function unknownTopic(topic: string): ProtoError {
  return { code: 'UNKNOWN_TOPIC_OR_PARTITION', message: `unknown topic ${topic}`, retriable: true };
}

/** A unary handler from a plain function; a thrown SpoolError travels as its status. */
function unary<Request, Response>(
  handler: (request: Request) => Response,
): grpc.handleUnaryCall<Request, Response> {
  return (call, callback) => {
    try {
      callback(null, handler(call.request));
    } catch (error) {
      callback(
        toGrpcStatus(
          error instanceof SpoolError
            ? error
            : new SpoolError('UNKNOWN_SERVER_ERROR', String(error)),
        ),
      );
    }
  };
}

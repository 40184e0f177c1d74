/**
 * Coordinators' lives as the active controller sees them, and the shards they own. A coordinator
 * registers with its first CoordinatorHeartbeat (id, endpoints, a new incarnation per process
 * start) and keeps heartbeating; one silent for `coordinator.session.timeout.ms`, one whose own
 * WatchMetadata stream closed and did not come back (its process died), or one that says it is
 * shutting down, is removed. Every change of the live set rebalances the
 * __consumer_offsets shards (coordinator-shard-assignment.ts) in the same store transaction as
 * the coordinator record, so the published owners and shard epochs are never half-updated.
 *
 * Sessions live in memory, as brokers' do: a controller that takes over gives every registered
 * coordinator one full session timeout to reach it.
 */
import { SpoolError } from '@spool/common';
import type { ControllerContext } from './controller-context';
import { reassignShards, type ShardOwnership } from './coordinator-shard-assignment';
import { offsetsTopicName } from './offsets-topic';
import { encodeRecord, type CoordinatorRecord, type EndpointRecord } from './metadata-records';
import { chunkOperationsMax, type IndependentWrite } from './metadata-writer';

/** A coordinator id names a process (the pod name, or host:port). */
const coordinatorIdPattern = /^[a-zA-Z0-9._:-]{1,128}$/;

export interface CoordinatorHeartbeatInput {
  readonly coordinatorId: string;
  readonly endpoints: readonly EndpointRecord[];
  readonly incarnationId: string;
  readonly shuttingDown: boolean;
}

export class CoordinatorLifecycle {
  private readonly lastHeartbeatMs = new Map<string, number>();

  constructor(
    private readonly context: ControllerContext,
    private readonly clock: () => number = Date.now,
  ) {
    for (const coordinatorId of context.state.coordinators.keys())
      this.lastHeartbeatMs.set(coordinatorId, clock());
  }

  /**
   * Registers the coordinator when it is new (or restarted), refreshes its session, or removes
   * it when it shuts down. Returns the shards it owns afterwards. Runs on the command queue.
   */
  async heartbeat(input: CoordinatorHeartbeatInput): Promise<ShardOwnership[]> {
    validate(input);
    const { coordinatorId } = input;
    const existing = this.context.state.coordinators.get(coordinatorId);
    if (input.shuttingDown) {
      if (existing !== undefined && existing.record.incarnationId === input.incarnationId)
        await this.remove([coordinatorId], 'shutting down');
      return [];
    }
    this.lastHeartbeatMs.set(coordinatorId, this.clock());
    const record: CoordinatorRecord = {
      coordinatorId,
      endpoints: input.endpoints.map((endpoint) => ({ ...endpoint })),
      incarnationId: input.incarnationId,
    };
    const restarted =
      existing !== undefined && existing.record.incarnationId !== input.incarnationId;
    const endpointsChanged =
      existing !== undefined &&
      JSON.stringify(existing.record.endpoints) !== JSON.stringify(record.endpoints);
    const shardsMissing = this.context.state.coordinatorShards.size < this.shardCount;
    if (existing === undefined || restarted || endpointsChanged || shardsMissing) {
      await this.commitLiveSet(
        [...this.context.state.coordinators.keys(), coordinatorId],
        [{ coordinatorId, record, modRevision: existing?.modRevision }],
        [],
        // A restarted process must load its shards again, and the previous process, if it still
        // runs, must be fenced: its shards get new epochs even though the owner id is the same.
        restarted ? coordinatorId : undefined,
      );
      this.context.logger.info(
        { coordinatorId, restarted, endpoints: record.endpoints },
        'coordinator registered',
      );
    }
    return this.shardsOf(coordinatorId);
  }

  /**
   * The common case, answered without the command queue: a registered coordinator of the same
   * incarnation and endpoints heartbeats, and nothing needs writing. Undefined when the
   * heartbeat must go through heartbeat() on the queue.
   */
  heartbeatWithoutChange(input: CoordinatorHeartbeatInput): ShardOwnership[] | undefined {
    if (input.shuttingDown) return undefined;
    const existing = this.context.state.coordinators.get(input.coordinatorId);
    if (
      existing === undefined ||
      existing.record.incarnationId !== input.incarnationId ||
      JSON.stringify(existing.record.endpoints) !==
        JSON.stringify(input.endpoints.map((endpoint) => ({ ...endpoint }))) ||
      this.context.state.coordinatorShards.size < this.shardCount
    ) {
      return undefined;
    }
    this.lastHeartbeatMs.set(input.coordinatorId, this.clock());
    return this.shardsOf(input.coordinatorId);
  }

  /** Coordinators whose session ran out. */
  expiredCoordinators(): string[] {
    const timeoutMs = this.context.settings.coordinatorSessionTimeoutMs;
    return [...this.context.state.coordinators.keys()].filter(
      (coordinatorId) =>
        this.clock() - (this.lastHeartbeatMs.get(coordinatorId) ?? -Infinity) > timeoutMs,
    );
  }

  /** Removes coordinators (session expired or shutting down) and moves their shards at once. */
  async remove(coordinatorIds: readonly string[], reason: string): Promise<void> {
    const removed = coordinatorIds.filter((id) => this.context.state.coordinators.has(id));
    if (removed.length === 0) return;
    const startedMs = this.clock();
    const live = [...this.context.state.coordinators.keys()].filter((id) => !removed.includes(id));
    await this.commitLiveSet(live, [], removed, undefined);
    for (const coordinatorId of removed) this.lastHeartbeatMs.delete(coordinatorId);
    // electionMs: how long moving their shards took to write, after the decision.
    this.context.logger.warn(
      { coordinators: removed, reason, electionMs: this.clock() - startedMs },
      'coordinators removed',
    );
  }

  /**
   * The coordinator's own WatchMetadata stream closed and it has not watched again: removes it
   * now when that incarnation is still the registered one (a restarted process's new
   * incarnation is left alone), instead of after coordinator.session.timeout.ms.
   */
  async removeDisconnected(coordinatorId: string, incarnationId: string): Promise<boolean> {
    const existing = this.context.state.coordinators.get(coordinatorId);
    if (existing === undefined || existing.record.incarnationId !== incarnationId) return false;
    await this.remove([coordinatorId], 'its controller stream closed');
    return true;
  }

  shardsOf(coordinatorId: string): ShardOwnership[] {
    return [...this.context.state.coordinatorShards.values()]
      .filter((shard) => shard.record.coordinatorId === coordinatorId)
      .map((shard) => ({ partition: shard.partition, ...shard.record }))
      .sort((left, right) => left.partition - right.partition);
  }

  /** The existing topic's partition count wins over the setting: shards never change count. */
  private get shardCount(): number {
    return (
      this.context.state.topics.get(offsetsTopicName)?.record.partitionCount ??
      this.context.settings.offsetsTopicPartitionCount
    );
  }

  /**
   * Coordinator records put or deleted, and every shard that moves: one transaction when it fits
   * (`chunkOperationsMax`), so a reader sees the whole change at one revision. A bigger change
   * (hundreds of shards) is written in order: the records put first (a new coordinator owns
   * nothing until its shards move), then the shards in chunks, each shard guarded by its own
   * compare, then the records deleted (once nothing points at them). Each shard is fenced by its
   * own epoch, so a reader that sees some moved and some not sees each shard with one owner; a
   * controller that dies midway leaves a live, if uneven, assignment, and the coordinators it
   * meant to remove expire again under the next controller, which moves the rest.
   */
  private async commitLiveSet(
    live: readonly string[],
    puts: ReadonlyArray<{
      coordinatorId: string;
      record: CoordinatorRecord;
      modRevision: bigint | undefined;
    }>,
    deletes: readonly string[],
    refencedCoordinator: string | undefined,
  ): Promise<void> {
    const keys = this.context.writer.metadataKeys;
    const state = this.context.state;
    const current = new Map<number, ShardOwnership>();
    for (const shard of state.coordinatorShards.values())
      current.set(shard.partition, { partition: shard.partition, ...shard.record });
    const changes = new Map(
      reassignShards(current, this.shardCount, live).map((change) => [change.partition, change]),
    );
    if (refencedCoordinator !== undefined) {
      for (const shard of current.values()) {
        if (shard.coordinatorId === refencedCoordinator && !changes.has(shard.partition))
          changes.set(shard.partition, { ...shard, shardEpoch: shard.shardEpoch + 1 });
      }
    }
    const { writer } = this.context;
    const recordPuts = puts.map((put): IndependentWrite => ({
      compare: writer.unchangedSince(keys.coordinator(put.coordinatorId), put.modRevision),
      operation: {
        kind: 'put',
        key: keys.coordinator(put.coordinatorId),
        value: encodeRecord(put.record),
      },
    }));
    const recordDeletes = deletes.map((id): IndependentWrite => ({
      compare: writer.unchangedSince(keys.coordinator(id), state.coordinators.get(id)!.modRevision),
      operation: { kind: 'delete', key: keys.coordinator(id) },
    }));
    const shardMoves = [...changes.values()].map((change): IndependentWrite => ({
      compare: writer.unchangedSince(
        keys.coordinatorShard(change.partition),
        state.coordinatorShards.get(change.partition)?.modRevision,
      ),
      operation: {
        kind: 'put',
        key: keys.coordinatorShard(change.partition),
        value: encodeRecord({
          coordinatorId: change.coordinatorId,
          shardEpoch: change.shardEpoch,
        }),
      },
    }));
    const commitTogether = (writes: readonly IndependentWrite[]) =>
      writer.commit(
        writes.map((write) => write.compare),
        writes.map((write) => write.operation),
      );
    const all = [...recordPuts, ...recordDeletes, ...shardMoves];
    if (all.length <= chunkOperationsMax) {
      await commitTogether(all);
    } else {
      if (recordPuts.length > 0) await commitTogether(recordPuts);
      await writer.commitIndependent(shardMoves);
      if (recordDeletes.length > 0) await commitTogether(recordDeletes);
    }
    if (changes.size > 0)
      this.context.logger.info({ shardsMoved: changes.size, live }, 'coordinator shards moved');
  }
}

function validate(input: CoordinatorHeartbeatInput): void {
  if (!coordinatorIdPattern.test(input.coordinatorId)) {
    throw new SpoolError(
      'INVALID_REQUEST',
      `coordinator_id "${input.coordinatorId}" must be 1-128 characters of [a-zA-Z0-9._:-]`,
    );
  }
  if (input.incarnationId === '')
    throw new SpoolError('INVALID_REQUEST', 'incarnation_id is empty');
  if (input.shuttingDown) return;
  if (!input.endpoints.some((endpoint) => endpoint.name === 'grpc')) {
    throw new SpoolError('INVALID_REQUEST', 'endpoints has no "grpc" endpoint');
  }
  for (const endpoint of input.endpoints) {
    if (
      endpoint.host === '' ||
      !Number.isInteger(endpoint.port) ||
      endpoint.port < 1 ||
      endpoint.port > 65535
    ) {
      throw new SpoolError(
        'INVALID_REQUEST',
        `endpoint "${endpoint.name}" has no valid host and port`,
      );
    }
  }
}

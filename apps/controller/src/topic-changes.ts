/**
 * Topic changes of any size, atomic to readers: creating a topic, adding partitions
 * (CreatePartitions) and deleting a topic, however many partition keys they write.
 *
 * A store transaction holds at most 128 operations (etcd's `--max-txn-ops`, mirrored by the local
 * store), so a topic of 10,000 partitions cannot be written in one. The topic's own key is the
 * commit point instead:
 *
 *   1. Small changes (the topic record and every partition key within `chunkOperationsMax`) are
 *      one transaction, as before: nothing to see in between.
 *   2. Create: the first transaction writes the topic record with `state: "creating"`, a
 *      committed partitionCount of 0 and `pendingPartitionCount` N, plus the first chunk of
 *      partition keys, on condition that the topic key is absent. Middle transactions write
 *      further chunks; the last writes the final chunk and flips the record to the committed
 *      form (no state, partitionCount N) in the same transaction.
 *   3. CreatePartitions from C to N: the same, except that the first transaction only adds
 *      `pendingPartitionCount` N to the committed record, which stays visible with C partitions;
 *      keys C..N-1 are hidden until the flip sets partitionCount to N.
 *   4. Delete: the first transaction flips the record to `state: "deleting"` (readers lose the
 *      whole topic at that revision); later transactions delete partition keys in chunks, and
 *      the last deletes the topic key (with a prefix delete that catches any key the view missed).
 *
 * Every transaction after the first also compares the topic key's revision with the one the
 * first wrote, and carries the controller's election guard as every write does: a deposed
 * controller, or one racing a rollback, writes nothing. Readers derive visibility from the topic
 * record alone (cluster-state.ts), so the controller's view, and everything WatchMetadata
 * publishes from it to storage nodes, gateways and coordinators, shows a change whole, in the one
 * delta of its flip, or not at all.
 *
 * A change that stopped before its flip (the controller died, lost its lease, or the store failed
 * mid-way) is rolled back by the active controller: `resolvePendingTopicChanges` runs when a
 * controller becomes active, before every topic command, in every maintenance round, and right
 * after a split change fails. It deletes the keys of a half-created topic and the keys above a topic's
 * committed count, then clears the marker. Rolling back rather than finishing follows KRaft, whose
 * new active controller aborts an incomplete metadata transaction (KIP-868): the requester never
 * got an answer and retries (UNAVAILABLE and NOT_CONTROLLER are retriable), the placement of the
 * unwritten partitions exists only in the dead controller's memory, and the brokers it chose may
 * be gone. A delete is the exception: its flip already happened, readers saw the topic go, so
 * what is left is finished.
 *
 * Commands run one at a time on the controller's queue, so when any of these functions runs, no
 * other change is in flight on this controller: whatever is pending was abandoned.
 */
import type { Compare, Operation } from '@spool/metadata';
import type { PendingTopicChange, TopicState } from './cluster-state';
import type { ControllerContext } from './controller-context';
import { encodeRecord, type PartitionRecord, type TopicRecord } from './metadata-records';
import {
  chunkBytesMax,
  chunkOperationsMax,
  operationBytes,
  splitIntoChunks,
} from './metadata-writer';

function initialPartition(replicas: readonly number[]): PartitionRecord {
  return { replicas, isr: replicas, leader: replicas[0]!, leaderEpoch: 0, partitionEpoch: 0 };
}

function put(key: string, value: Buffer): Operation {
  return { kind: 'put', key, value };
}

function unchangedSince(key: string, modRevision: bigint): Compare {
  return { key, kind: 'modRevision', equals: modRevision };
}

/** Whether the operations fit one transaction of a split change. */
function fitsOneTransaction(operations: readonly Operation[]): boolean {
  if (operations.length > chunkOperationsMax) return false;
  let sizeBytes = 0;
  for (const operation of operations) sizeBytes += operationBytes(operation);
  return sizeBytes <= chunkBytesMax;
}

/** The committed record without the fields of a change in flight. */
function committed(record: TopicRecord, partitionCount: number): TopicRecord {
  const { state: _state, pendingPartitionCount: _pending, ...rest } = record;
  return { ...rest, partitionCount };
}

/**
 * Writes a new topic (`record` in its committed form) with the given replica assignment, one
 * partition per entry. Throws INVALID_UPDATE_VERSION when the topic key already exists.
 */
export async function writeTopicCreation(
  context: ControllerContext,
  record: TopicRecord,
  assignment: readonly (readonly number[])[],
): Promise<void> {
  const keys = context.writer.metadataKeys;
  const topicKey = keys.topic(record.name);
  const partitionPuts = assignment.map((replicas, partition) =>
    put(keys.partition(record.name, partition), encodeRecord(initialPartition(replicas))),
  );
  const whole = [put(topicKey, encodeRecord(record)), ...partitionPuts];
  if (fitsOneTransaction(whole)) {
    await context.writer.commit([{ key: topicKey, kind: 'absent' }], whole);
    return;
  }
  const marker: TopicRecord = {
    ...record,
    partitionCount: 0,
    state: 'creating',
    pendingPartitionCount: record.partitionCount,
  };
  await writeInChunks(context, record.name, partitionPuts, {
    firstCompare: { key: topicKey, kind: 'absent' },
    marker,
    flip: record,
  });
}

/**
 * Adds partitions `assignment` (partition ids from the topic's count on) and commits the new
 * count `partitionCount`. Throws INVALID_UPDATE_VERSION when the topic changed since it was read.
 */
export async function writePartitionGrowth(
  context: ControllerContext,
  topic: TopicState,
  partitionCount: number,
  assignment: readonly (readonly number[])[],
): Promise<void> {
  const keys = context.writer.metadataKeys;
  const name = topic.record.name;
  const topicKey = keys.topic(name);
  const first = topic.record.partitionCount;
  const partitionPuts = assignment.map((replicas, index) =>
    put(keys.partition(name, first + index), encodeRecord(initialPartition(replicas))),
  );
  const flip = committed(topic.record, partitionCount);
  const whole = [put(topicKey, encodeRecord(flip)), ...partitionPuts];
  if (fitsOneTransaction(whole)) {
    await context.writer.commit([unchangedSince(topicKey, topic.modRevision)], whole);
    return;
  }
  await writeInChunks(context, name, partitionPuts, {
    firstCompare: unchangedSince(topicKey, topic.modRevision),
    marker: { ...topic.record, pendingPartitionCount: partitionCount },
    flip,
  });
}

/**
 * Case 2 and 3 of the header: the marker with the first chunk, the middle chunks, the flip with
 * the last chunk. On a failure after the marker the change is rolled back at once if this
 * controller still can (else by whichever controller is active next), and the error is rethrown.
 */
async function writeInChunks(
  context: ControllerContext,
  topic: string,
  partitionPuts: readonly Operation[],
  plan: { firstCompare: Compare; marker: TopicRecord; flip: TopicRecord },
): Promise<void> {
  const topicKey = context.writer.metadataKeys.topic(topic);
  // One operation of the first and of the last transaction is the topic record.
  const chunks = splitIntoChunks(partitionPuts, chunkOperationsMax - 1, (operation) => operation);
  const markerRevision = await context.writer.commit(
    [plan.firstCompare],
    [put(topicKey, encodeRecord(plan.marker)), ...chunks[0]!],
  );
  try {
    await context.writer.chunkCommitted(1);
    for (let index = 1; index < chunks.length - 1; index++) {
      await context.writer.commit([unchangedSince(topicKey, markerRevision)], chunks[index]!);
      await context.writer.chunkCommitted(index + 1);
    }
    const last = chunks.length > 1 ? chunks[chunks.length - 1]! : [];
    await context.writer.commit(
      [unchangedSince(topicKey, markerRevision)],
      [put(topicKey, encodeRecord(plan.flip)), ...last],
    );
  } catch (error) {
    context.logger.warn(
      { err: error, topic },
      'a topic change failed before its commit point; rolling it back',
    );
    await resolvePendingTopicChanges(context).catch((rollbackError: unknown) =>
      context.logger.warn(
        { err: rollbackError, topic },
        'rolling back failed; the active controller retries in its maintenance',
      ),
    );
    throw error;
  }
  context.logger.info(
    { topic, partitionCount: plan.flip.partitionCount, transactions: chunks.length },
    'topic change committed in several transactions',
  );
}

/** Deletes a committed topic and every key under it (case 4 of the header). */
export async function writeTopicDeletion(
  context: ControllerContext,
  topic: TopicState,
): Promise<void> {
  const keys = context.writer.metadataKeys;
  const name = topic.record.name;
  const topicKey = keys.topic(name);
  const hidden = context.state.pendingTopicChanges().find((change) => change.topic === name);
  const partitionCount = topic.partitions.size + (hidden?.partitions.length ?? 0);
  if (partitionCount + 1 <= chunkOperationsMax) {
    await context.writer.commit(
      [unchangedSince(topicKey, topic.modRevision)],
      [
        { kind: 'delete', key: topicKey },
        { kind: 'deletePrefix', prefix: keys.partitions(name) },
      ],
    );
    return;
  }
  const partitions = [...topic.partitions.keys(), ...(hidden?.partitions ?? [])];
  const markerRevision = await context.writer.commit(
    [unchangedSince(topicKey, topic.modRevision)],
    [put(topicKey, encodeRecord({ ...topic.record, state: 'deleting' }))],
  );
  await context.writer.chunkCommitted(1);
  await removeTopicKeys(context, name, markerRevision, partitions, (chunkNumber) =>
    context.writer.chunkCommitted(chunkNumber + 1),
  );
}

/**
 * Deletes the partition keys in chunks, then the topic key with a prefix delete of whatever
 * partition keys are left, each transaction on condition that the topic key is still at
 * `topicRevision` (or still absent, when undefined).
 */
async function removeTopicKeys(
  context: ControllerContext,
  topic: string,
  topicRevision: bigint | undefined,
  partitions: readonly number[],
  chunkCommitted: (chunkNumber: number) => Promise<void> = async () => {},
): Promise<void> {
  const keys = context.writer.metadataKeys;
  const topicKey = keys.topic(topic);
  const condition: Compare =
    topicRevision === undefined
      ? { key: topicKey, kind: 'absent' }
      : unchangedSince(topicKey, topicRevision);
  const deletes = partitions.map((partition): Operation => ({
    kind: 'delete',
    key: keys.partition(topic, partition),
  }));
  const chunks = splitIntoChunks(deletes, chunkOperationsMax, (operation) => operation);
  for (const [index, chunk] of chunks.entries()) {
    await context.writer.commit([condition], chunk);
    await chunkCommitted(index + 1);
  }
  await context.writer.commit(
    [condition],
    [
      ...(topicRevision === undefined ? [] : [{ kind: 'delete', key: topicKey } as const]),
      { kind: 'deletePrefix', prefix: keys.partitions(topic) },
    ],
  );
}

/**
 * Finishes or rolls back every topic change that stopped before its commit point (see the
 * header). Returns how many it resolved.
 */
export async function resolvePendingTopicChanges(context: ControllerContext): Promise<number> {
  const pending = context.state.pendingTopicChanges();
  for (const change of pending) await resolve(context, change);
  return pending.length;
}

/**
 * Cases:
 *   1. Partition keys without a topic key: nobody can see them; delete them.
 *   2. A topic being created: roll back (delete its keys, the topic key last).
 *   3. A topic being deleted: finish (the same deletes; readers already saw it go).
 *   4. A committed topic with keys at or above its count, or a pending marker: roll back the
 *      CreatePartitions (delete those keys, then write the record without the marker).
 */
async function resolve(context: ControllerContext, change: PendingTopicChange): Promise<void> {
  const { topic, record, modRevision, partitions } = change;
  const outcome =
    record === undefined
      ? 'removed partition keys left without their topic'
      : record.state === 'creating'
        ? 'rolled back the creation of a topic'
        : record.state === 'deleting'
          ? 'finished the deletion of a topic'
          : 'rolled back partitions added to a topic';
  if (record === undefined) {
    // Case 1.
    await removeTopicKeys(context, topic, undefined, partitions);
  } else if (record.state !== undefined) {
    // Cases 2 and 3.
    await removeTopicKeys(context, topic, modRevision, partitions);
  } else {
    // Case 4.
    const keys = context.writer.metadataKeys;
    const topicKey = keys.topic(topic);
    const condition = unchangedSince(topicKey, modRevision!);
    const deletes = partitions.map((partition): Operation => ({
      kind: 'delete',
      key: keys.partition(topic, partition),
    }));
    for (const chunk of splitIntoChunks(deletes, chunkOperationsMax, (operation) => operation)) {
      await context.writer.commit([condition], chunk);
    }
    if (record.pendingPartitionCount !== undefined) {
      await context.writer.commit(
        [condition],
        [put(topicKey, encodeRecord(committed(record, record.partitionCount)))],
      );
    }
  }
  context.logger.warn(
    {
      topic,
      state: record?.state,
      partitionCount: record?.partitionCount,
      pendingPartitionCount: record?.pendingPartitionCount,
      partitionKeysRemoved: partitions.length,
    },
    outcome,
  );
}

// Bad input on the public gRPC API (the gateway, and a storage node's Append directly): generated
// and mutated requests — invalid and huge topic names, negative and enormous partitions,
// offsets and sizes, batches with a wrong CRC, length or magic, a lying record count, truncated
// varints, oversize records, unknown enum values, missing fields. Every input must get a clear
// error (a Kafka-style code and a message naming what was wrong), no process may crash, nothing
// partial may be written, and the cluster must serve well-formed traffic afterwards: the logs
// hold exactly the valid batches sent between the bad ones, byte for byte. Each run prints its
// seed (`SPOOL_FUZZ_SEED` replays it) and how many inputs it tried.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCodedError } from '@spool/common';
import { Acks, OffsetSpec, type PartitionAppendResult } from '@spool/protocol';
import { decodeRecordBatches, recordBatchSizeBytes } from '@spool/record-batch';
import { GatewayTestClient, startGatewayProcess } from '../support/gateway-client';
import type { ServiceProcess } from '../support/service-process';
import { StorageTestCluster } from '../support/storage-cluster';
import {
  fuzzRandom,
  badOffsets,
  badPartitions,
  invalidTopicNames,
  mutateBatch,
  validBatch,
} from './fuzz-support';

const topic = 'fuzzed';
const partitionCount = 3;
const random = fuzzRandom();
let cluster: StorageTestCluster;
let gateway: ServiceProcess;
let client: GatewayTestClient;
let inputsTried = 0;
/** Valid records acknowledged per partition, in order: what the logs must hold at the end. */
const acknowledged = new Map<number, string[]>();

beforeAll(async () => {
  console.log(
    `bad-input gRPC fuzz seed ${random.seed} (SPOOL_FUZZ_SEED=${random.seed} replays it)`,
  );
  cluster = await StorageTestCluster.start(1);
  gateway = await startGatewayProcess(cluster.controller.grpcPort);
  client = new GatewayTestClient(`127.0.0.1:${gateway.grpcPort}`);
  await cluster.createTopic(topic, partitionCount, 1);
}, 60_000);

afterAll(async () => {
  console.log(`bad-input gRPC fuzz: ${inputsTried} inputs tried (seed ${random.seed})`);
  client?.close();
  gateway?.child.kill('SIGKILL');
  await gateway?.exited;
  await cluster?.stop();
});

/** What a call answered: a whole-call error, or per-item errors. */
type Outcome =
  { kind: 'rejected'; code: string; message: string } | { kind: 'answered'; value: unknown };

async function attempt(call: () => Promise<unknown>): Promise<Outcome> {
  inputsTried++;
  try {
    return { kind: 'answered', value: await call() };
  } catch (error) {
    if (!isCodedError(error)) throw error;
    return { kind: 'rejected', code: error.code, message: error.message };
  }
}

/** Asserts a coded, explained error: Kafka's vocabulary (upper snake case) and a message. */
function expectClearError(
  error: { code: string; message: string } | undefined,
  input: string,
  mentions: RegExp,
): void {
  expect(error, `${input} was accepted`).toBeDefined();
  expect(error!.code, input).toMatch(/^[A-Z][A-Z_]+$/);
  expect(error!.code, input).not.toBe('INTERNAL');
  expect(error!.code, input).not.toBe('UNKNOWN_SERVER_ERROR');
  expect(error!.message, `${input}: ${error!.code}`).toMatch(mentions);
}

function produce(
  partitions: { topic?: string; partition: number; records: Buffer }[],
  acks = Acks.ACKS_ALL,
) {
  return client.call(client.client.produce, {
    partitions: partitions.map((entry) => ({ topic: entry.topic ?? topic, ...entry })),
    acks,
    timeoutMs: 10_000,
  });
}

let validSequence = 0;
/** Sends one valid batch to `partition` and remembers it as acknowledged. */
async function produceValid(partition: number): Promise<void> {
  const label = `valid-${validSequence++}`;
  const response = await produce([{ partition, records: validBatch(label, 2) }]);
  expect(response.results[0]!.error, label).toBeUndefined();
  const records = acknowledged.get(partition) ?? [];
  records.push(`${label}-value-0`, `${label}-value-1`);
  acknowledged.set(partition, records);
}

describe('bad input on the gateway and storage gRPC APIs', () => {
  it('refuses malformed batches, one per partition result, and writes nothing of them', async () => {
    for (let round = 0; round < 150; round++) {
      const partition = random.below(partitionCount);
      const neighbour = (partition + 1) % partitionCount;
      const mutation = mutateBatch(random, validBatch(`mutated-${round}`, 1 + random.below(5)));
      const label = `valid-${validSequence++}`;
      inputsTried++;
      const response = await produce([
        { partition, records: mutation.bytes },
        { partition: neighbour, records: validBatch(label, 2) },
      ]);
      const [bad, good] = response.results as [PartitionAppendResult, PartitionAppendResult];
      // The well-formed neighbour in the same request is written all the same.
      expect(good.error, `${label} beside ${mutation.name}`).toBeUndefined();
      acknowledged.set(neighbour, [
        ...(acknowledged.get(neighbour) ?? []),
        `${label}-value-0`,
        `${label}-value-1`,
      ]);
      if (bad.error === undefined && mutation.mayBeAccepted === true) {
        // The flipped byte was one the leader overwrites (base offset, leader epoch).
        const records = acknowledged.get(partition) ?? [];
        const count = bad.lastOffset - bad.baseOffset + 1n;
        for (let index = 0; index < Number(count); index++)
          records.push(`mutated-${round}-value-${index}`);
        acknowledged.set(partition, records);
        continue;
      }
      expectClearError(bad.error, `${mutation.name} (round ${round})`, mutation.mentions);
    }
  }, 120_000);

  it('refuses an oversize batch with a size error', async () => {
    const oversize = validBatch('x'.repeat(600_000), 2);
    const response = await attempt(() => produce([{ partition: 0, records: oversize }]));
    const error =
      response.kind === 'rejected'
        ? response
        : (response.value as { results: PartitionAppendResult[] }).results[0]!.error;
    expectClearError(error, 'a 1.2 MB batch', /large|size|bytes|max/i);
    await produceValid(0);
  });

  it('refuses invalid topic names and partitions on produce, fetch and list offsets', async () => {
    const targets: { topic: string; partition: number }[] = [
      ...invalidTopicNames.map((name) => ({ topic: name, partition: 0 })),
      ...badPartitions.map((partition) => ({ topic, partition })),
    ];
    for (const target of targets) {
      const input = `topic ${JSON.stringify(target.topic.slice(0, 40))} partition ${target.partition}`;
      const produced = await attempt(() =>
        produce([{ ...target, records: validBatch('lost', 1) }]),
      );
      const produceError =
        produced.kind === 'rejected'
          ? produced
          : (produced.value as { results: PartitionAppendResult[] }).results[0]!.error;
      expectClearError(produceError, `produce to ${input}`, /topic|partition/i);

      const fetched = await attempt(() =>
        client.call(client.client.fetch, {
          partitions: [{ ...target, fetchOffset: 0n, partitionMaxBytes: 1024 }],
          maxWaitMs: 10,
          minBytes: 1,
          maxBytes: 1024,
        }),
      );
      const fetchError =
        fetched.kind === 'rejected'
          ? fetched
          : (fetched.value as { partitions: { error?: { code: string; message: string } }[] })
              .partitions[0]!.error;
      expectClearError(fetchError, `fetch from ${input}`, /topic|partition/i);

      const listed = await attempt(() =>
        client.call(client.client.listOffsets, {
          partitions: [{ ...target, spec: OffsetSpec.OFFSET_SPEC_LATEST, timestampMs: 0n }],
        }),
      );
      const listError =
        listed.kind === 'rejected'
          ? listed
          : (listed.value as { results: { error?: { code: string; message: string } }[] })
              .results[0]!.error;
      expectClearError(listError, `list offsets of ${input}`, /topic|partition/i);
    }
    await produceValid(1);
  }, 60_000);

  it('refuses out-of-range offsets and negative sizes on fetch, and bad offsets on delete', async () => {
    for (const offset of badOffsets) {
      const fetched = await attempt(() =>
        client.call(client.client.fetch, {
          partitions: [{ topic, partition: 0, fetchOffset: offset, partitionMaxBytes: 1024 }],
          maxWaitMs: 10,
          minBytes: 1,
          maxBytes: 1024,
        }),
      );
      const error =
        fetched.kind === 'rejected'
          ? fetched
          : (fetched.value as { partitions: { error?: { code: string; message: string } }[] })
              .partitions[0]!.error;
      expectClearError(error, `fetch at offset ${offset}`, /offset/i);
    }
    for (const sizes of [
      {
        maxBytes: -1,
        partitionMaxBytes: 1024,
        maxWaitMs: 10,
        minBytes: 1,
        field: /maxBytes|max bytes/i,
      },
      {
        maxBytes: 1024,
        partitionMaxBytes: -5,
        maxWaitMs: 10,
        minBytes: 1,
        field: /partitionMaxBytes|max bytes/i,
      },
      {
        maxBytes: 1024,
        partitionMaxBytes: 1024,
        maxWaitMs: -1,
        minBytes: 1,
        field: /maxWaitMs|wait/i,
      },
      {
        maxBytes: 1024,
        partitionMaxBytes: 1024,
        maxWaitMs: 10,
        minBytes: -1,
        field: /minBytes|min bytes/i,
      },
    ]) {
      const fetched = await attempt(() =>
        client.call(client.client.fetch, {
          partitions: [
            { topic, partition: 0, fetchOffset: 0n, partitionMaxBytes: sizes.partitionMaxBytes },
          ],
          maxWaitMs: sizes.maxWaitMs,
          minBytes: sizes.minBytes,
          maxBytes: sizes.maxBytes,
        }),
      );
      const error =
        fetched.kind === 'rejected'
          ? fetched
          : (fetched.value as { partitions: { error?: { code: string; message: string } }[] })
              .partitions[0]!.error;
      expectClearError(
        error,
        `fetch with ${JSON.stringify({ ...sizes, field: undefined })}`,
        sizes.field,
      );
    }
    for (const offset of [-3n, 2n ** 63n - 1n, 10n ** 15n]) {
      const deleted = await attempt(() =>
        client.call(client.client.deleteRecords, {
          partitions: [{ topic, partition: 2, offset }],
          timeoutMs: 5_000,
        }),
      );
      const error =
        deleted.kind === 'rejected'
          ? deleted
          : (deleted.value as { results: { error?: { code: string; message: string } }[] })
              .results[0]!.error;
      expectClearError(error, `delete records before ${offset}`, /offset/i);
    }
    await produceValid(2);
  });

  it('refuses unknown enum values and missing fields, naming the field', async () => {
    const unknownAcks = await attempt(() =>
      client.call(client.client.produce, {
        partitions: [{ topic, partition: 0, records: validBatch('acks', 1) }],
        acks: 99 as Acks,
        timeoutMs: 5_000,
      }),
    );
    const acksError =
      unknownAcks.kind === 'rejected'
        ? unknownAcks
        : (unknownAcks.value as { results: PartitionAppendResult[] }).results[0]!.error;
    expectClearError(acksError, 'acks 99', /acks/i);

    const unknownSpec = await attempt(() =>
      client.call(client.client.listOffsets, {
        partitions: [{ topic, partition: 0, spec: 42 as OffsetSpec, timestampMs: 0n }],
      }),
    );
    const specError =
      unknownSpec.kind === 'rejected'
        ? unknownSpec
        : (unknownSpec.value as { results: { error?: { code: string; message: string } }[] })
            .results[0]!.error;
    expectClearError(specError, 'offset spec 42', /spec/i);

    const missingTopic = await attempt(() =>
      client.call(client.client.produce, {
        partitions: [{ topic: '', partition: 0, records: Buffer.alloc(0) }],
        acks: Acks.ACKS_ALL,
        timeoutMs: 5_000,
      }),
    );
    const missingError =
      missingTopic.kind === 'rejected'
        ? missingTopic
        : (missingTopic.value as { results: PartitionAppendResult[] }).results[0]!.error;
    expectClearError(missingError, 'a produce with no topic and no records', /topic|record/i);
    await produceValid(0);
  });

  it('refuses invalid topic creation, growth and configuration', async () => {
    const creations: {
      name: string;
      numPartitions: number;
      replicationFactor: number;
      configs?: { name: string; value: string }[];
      mentions: RegExp;
    }[] = [
      ...invalidTopicNames.map((name) => ({
        name,
        numPartitions: 1,
        replicationFactor: 1,
        mentions: /topic|name/i,
      })),
      {
        name: '__consumer_offsets',
        numPartitions: 1,
        replicationFactor: 1,
        mentions: /__|internal|reserved/i,
      },
      // -1 is not here: it asks for the cluster's default, as in Kafka (KIP-464).
      {
        name: 'negative-partitions',
        numPartitions: -5,
        replicationFactor: 1,
        mentions: /partition/i,
      },
      {
        name: 'huge-partitions',
        numPartitions: 2_000_000_000,
        replicationFactor: 1,
        mentions: /partition/i,
      },
      { name: 'zero-replicas', numPartitions: 1, replicationFactor: 0, mentions: /replication/i },
      {
        name: 'too-many-replicas',
        numPartitions: 1,
        replicationFactor: 7,
        mentions: /replication|broker/i,
      },
      {
        name: 'unknown-config',
        numPartitions: 1,
        replicationFactor: 1,
        configs: [{ name: 'retention.msec', value: '1' }],
        mentions: /retention\.msec/,
      },
      {
        name: 'bad-config-value',
        numPartitions: 1,
        replicationFactor: 1,
        configs: [{ name: 'retention.ms', value: 'soon' }],
        mentions: /retention\.ms/,
      },
      {
        name: 'negative-segment',
        numPartitions: 1,
        replicationFactor: 1,
        configs: [{ name: 'segment.bytes', value: '-5' }],
        mentions: /segment\.bytes/,
      },
    ];
    for (const creation of creations) {
      const created = await attempt(() =>
        client.call(client.client.createTopics, {
          topics: [
            {
              name: creation.name,
              numPartitions: creation.numPartitions,
              replicationFactor: creation.replicationFactor,
              configs: (creation.configs ?? []).map((entry) => ({ ...entry, isDefault: false })),
            },
          ],
          validateOnly: false,
        }),
      );
      const error =
        created.kind === 'rejected'
          ? created
          : (created.value as { results: { error?: { code: string; message: string } }[] })
              .results[0]!.error;
      expectClearError(
        error,
        `create ${JSON.stringify(creation.name.slice(0, 40))}`,
        creation.mentions,
      );
    }
    for (const count of [-1, 0, 1, 2_000_000_000]) {
      const grown = await attempt(() =>
        client.call(client.client.createPartitions, {
          topics: [{ name: topic, count }],
          validateOnly: false,
        }),
      );
      const error =
        grown.kind === 'rejected'
          ? grown
          : (grown.value as { results: { error?: { code: string; message: string } }[] })
              .results[0]!.error;
      expectClearError(error, `grow ${topic} to ${count} partitions`, /partition|count/i);
    }
    const altered = await attempt(() =>
      client.call(client.client.alterConfigs, {
        topics: [
          {
            topic,
            set: [{ name: 'min.insync.replicas', value: '-2', isDefault: false }],
            delete: [],
          },
        ],
        validateOnly: false,
      }),
    );
    const alterError =
      altered.kind === 'rejected'
        ? altered
        : (altered.value as { results: { error?: { code: string; message: string } }[] })
            .results[0]!.error;
    expectClearError(alterError, 'min.insync.replicas -2', /min\.insync\.replicas/);
    const listed = await client.call(client.client.listTopics, { includeInternal: false });
    expect(listed.names).toEqual([topic]);
  });

  it('refuses malformed batches sent straight to the leader storage node', async () => {
    const storage = cluster.storageClient(0);
    try {
      for (let round = 0; round < 50; round++) {
        const mutation = mutateBatch(random, validBatch(`direct-${round}`, 3));
        if (mutation.mayBeAccepted === true) continue;
        const outcome = await attempt(
          () =>
            new Promise((resolve, reject) =>
              storage.append(
                {
                  partitions: [{ topic, partition: 1, records: mutation.bytes }],
                  acks: Acks.ACKS_ALL,
                  timeoutMs: 5_000,
                },
                (error, response) => (error === null ? resolve(response) : reject(error)),
              ),
            ),
        );
        expect(outcome.kind, mutation.name).toBe('answered');
        const result = (outcome as { value: { results: PartitionAppendResult[] } }).value
          .results[0]!;
        expectClearError(result.error, `direct ${mutation.name}`, mutation.mentions);
      }
    } finally {
      storage.close();
    }
  });

  it('still serves well-formed traffic, and the logs hold exactly the acknowledged records', async () => {
    expect(gateway.child.exitCode).toBeNull();
    expect(cluster.controller.child.exitCode).toBeNull();
    for (const node of cluster.nodes.values()) expect(node.process.child.exitCode).toBeNull();
    for (let partition = 0; partition < partitionCount; partition++) {
      await produceValid(partition);
      const values: string[] = [];
      let offset = 0n;
      for (;;) {
        const fetched = await client.call(client.client.fetch, {
          partitions: [{ topic, partition, fetchOffset: offset, partitionMaxBytes: 1024 * 1024 }],
          maxWaitMs: 10,
          minBytes: 1,
          maxBytes: 1024 * 1024,
        });
        const result = fetched.partitions[0]!;
        expect(result.error).toBeUndefined();
        if (result.records.length === 0) break;
        // Every batch served is whole and passes its CRC (the decoder verifies it).
        for (let position = 0; position < result.records.length;) {
          position += recordBatchSizeBytes(result.records, position);
        }
        for (const batch of decodeRecordBatches(result.records)) {
          for (const record of batch.records) values.push(record.value!.toString());
          offset = batch.header.baseOffset + BigInt(batch.header.lastOffsetDelta) + 1n;
        }
        if (offset >= result.highWatermark) break;
      }
      expect(values, `partition ${partition}`).toEqual(acknowledged.get(partition) ?? []);
    }
  });
});

// Proves the Kafka listener's KIP-848 checks on the wire, against `spool dev` (one storage node,
// a coordinator, a gateway): ConsumerGroupHeartbeat refuses a subscribed regex that RE2 refuses
// with INVALID_REGULAR_EXPRESSION (128) and joins the member with a valid one, and OffsetFetch v9
// checks the member a fetch names, as Kafka's coordinator does: the member at its epoch gets its
// committed offset, a stale epoch is STALE_MEMBER_EPOCH (113), an unknown member
// UNKNOWN_MEMBER_ID (25), and a fetch that names no member (null, -1) is not checked. Each request
// goes on its own connection (test/support/kafka-wire-client.ts) and is read field by field.
import {
  type ConsumerGroupHeartbeatRequest,
  type ConsumerGroupHeartbeatResponse,
  type OffsetFetchResponse,
  defaultConsumerGroupHeartbeatRequest,
  defaultOffsetCommitRequest,
  defaultOffsetFetchRequest,
  readConsumerGroupHeartbeatResponse,
  readOffsetCommitResponse,
  readOffsetFetchResponse,
  writeConsumerGroupHeartbeatRequest,
  writeOffsetCommitRequest,
  writeOffsetFetchRequest,
} from '@spool/kafka-protocol';
import { Spool, type Admin } from '@spool/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kafkaRequest } from '../support/kafka-wire-client';
import { startSpoolDev, type SpoolDevProcess } from '../support/spool-dev-process';

const topic = 'wire-orders';
const groupId = 'wire-group';
const memberId = 'wire-member-a';
const ApiKey = { OffsetCommit: 8, OffsetFetch: 9, ConsumerGroupHeartbeat: 68 } as const;
const KafkaError = {
  UnknownMemberId: 25,
  StaleMemberEpoch: 113,
  InvalidRegularExpression: 128,
} as const;
const fetchVersion = 9;

let dev: SpoolDevProcess | undefined;
let admin: Admin | undefined;
let listener: { host: string; port: number };

beforeAll(async () => {
  dev = await startSpoolDev(['--nodes', '1']);
  const gateway = dev.processes.find((entry) => entry.role === 'gateway')!;
  listener = { host: '127.0.0.1', port: (gateway.ports as { kafka?: number }).kafka! };
  admin = new Spool({ brokers: [dev.gatewayAddress], clientId: 'kip848-wire' }).admin({
    requestTimeoutMs: 10_000,
  });
  await admin.createTopics({ topics: [{ topic, numPartitions: 2, replicationFactor: 1 }] });
}, 60_000);

afterAll(async () => {
  try {
    await admin?.disconnect();
  } finally {
    await dev?.stop();
  }
});

function heartbeat(
  fields: Partial<ConsumerGroupHeartbeatRequest>,
): Promise<ConsumerGroupHeartbeatResponse> {
  return kafkaRequest(listener, {
    apiKey: ApiKey.ConsumerGroupHeartbeat,
    version: 1,
    write: (writer) =>
      writeConsumerGroupHeartbeatRequest(
        writer,
        { ...defaultConsumerGroupHeartbeatRequest(), groupId, memberId, ...fields },
        1,
      ),
    read: (reader) => readConsumerGroupHeartbeatResponse(reader, 1),
  });
}

const join: Partial<ConsumerGroupHeartbeatRequest> = {
  memberEpoch: 0,
  rebalanceTimeoutMs: 30_000,
  topicPartitions: [],
};

function fetchOffsets(member: {
  memberId: string | null;
  memberEpoch: number;
}): Promise<OffsetFetchResponse> {
  return kafkaRequest(listener, {
    apiKey: ApiKey.OffsetFetch,
    version: fetchVersion,
    write: (writer) =>
      writeOffsetFetchRequest(
        writer,
        {
          ...defaultOffsetFetchRequest(),
          groups: [
            {
              groupId,
              ...member,
              topics: [{ name: topic, topicId: Buffer.alloc(16), partitionIndexes: [0] }],
            },
          ],
        },
        fetchVersion,
      ),
    read: (reader) => readOffsetFetchResponse(reader, fetchVersion),
  });
}

describe('KIP-848 checks on the Kafka listener', () => {
  it('refuses a regex RE2 refuses, and checks the member an OffsetFetch v9 names', async () => {
    for (const pattern of ['wire-(', 'wire-(?!x).*', '(w)\\1']) {
      const refused = await heartbeat({ ...join, subscribedTopicRegex: pattern });
      expect(refused.errorCode, `${pattern}: ${refused.errorMessage}`).toBe(
        KafkaError.InvalidRegularExpression,
      );
      expect(refused.errorMessage).toContain(pattern);
    }

    const joined = await heartbeat({ ...join, subscribedTopicRegex: 'wire-.*' });
    expect(joined.errorCode, joined.errorMessage ?? '').toBe(0);
    expect(joined.memberEpoch).toBeGreaterThan(0);
    expect(joined.assignment?.topicPartitions.flatMap((entry) => entry.partitions).sort()).toEqual([
      0, 1,
    ]);

    const committed = await kafkaRequest(listener, {
      apiKey: ApiKey.OffsetCommit,
      version: 9,
      write: (writer) =>
        writeOffsetCommitRequest(
          writer,
          {
            ...defaultOffsetCommitRequest(),
            groupId,
            memberId,
            generationIdOrMemberEpoch: joined.memberEpoch,
            topics: [
              {
                name: topic,
                topicId: Buffer.alloc(16),
                partitions: [
                  {
                    partitionIndex: 0,
                    committedOffset: 0n,
                    committedLeaderEpoch: -1,
                    committedMetadata: null,
                  },
                ],
              },
            ],
          },
          9,
        ),
      read: (reader) => readOffsetCommitResponse(reader, 9),
    });
    expect(committed.topics[0]!.partitions[0]!.errorCode).toBe(0);

    const atEpoch = (await fetchOffsets({ memberId, memberEpoch: joined.memberEpoch })).groups[0]!;
    expect(atEpoch.errorCode).toBe(0);
    expect(atEpoch.topics[0]!.partitions[0]).toMatchObject({
      partitionIndex: 0,
      committedOffset: 0n,
    });
    const stale = (await fetchOffsets({ memberId, memberEpoch: joined.memberEpoch + 1 }))
      .groups[0]!;
    expect(stale).toMatchObject({ errorCode: KafkaError.StaleMemberEpoch, topics: [] });
    const unknown = (await fetchOffsets({ memberId: 'wire-ghost', memberEpoch: 1 })).groups[0]!;
    expect(unknown).toMatchObject({ errorCode: KafkaError.UnknownMemberId, topics: [] });
    const unnamed = (await fetchOffsets({ memberId: null, memberEpoch: -1 })).groups[0]!;
    expect(unnamed.errorCode).toBe(0);
    expect(unnamed.topics[0]!.partitions[0]!.committedOffset).toBe(0n);

    const left = await heartbeat({ memberEpoch: -1 });
    expect([left.errorCode, left.memberEpoch]).toEqual([0, -1]);
  }, 60_000);
});

/**
 * OffsetCommit and OffsetFetch on the coordinators' committed offsets (the records of
 * __consumer_offsets the SDK's commits are), so a Kafka client and the SDK resume from each
 * other's commits.
 *
 * 1. A commit names the member and its generation. For a classic member this gateway remembers
 *    (kafka-classic-groups.ts), the generation it holds stands for the coordinator's current
 *    member epoch: Kafka lets a classic member commit what it holds while its group rebalances,
 *    before it rejoins. Anything else goes as it came: a consumer-group member's epoch, or
 *    generation -1 and no member id for a client that assigns itself partitions. From version 9
 *    (KIP-848) a consumer-group member's stale epoch is STALE_MEMBER_EPOCH, which the Java
 *    client retries after its next heartbeat; a classic member's is ILLEGAL_GENERATION.
 * 2. OffsetFetch before version 8 asks for one group, from 8 for several; topics null means
 *    every committed partition. From version 10 topics are named by id.
 * 3. From OffsetFetch version 9 (KIP-848) a fetch may name a member and its epoch (the Java
 *    client's group.protocol=consumer does): the coordinator checks them as Kafka's
 *    ConsumerGroup.validateOffsetFetch does, and the group's error is Kafka's own,
 *    UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH (the client retries the latter after its next
 *    heartbeat), with no topics. A null member id with epoch -1 (librdkafka, the classic Java consumer, admin
 *    clients) is not checked.
 */
import {
  type OffsetCommitRequest,
  type OffsetCommitResponse,
  type OffsetFetchRequest,
  type OffsetFetchResponse,
  type OffsetFetchResponsePartition,
  defaultOffsetCommitResponse,
  defaultOffsetFetchResponse,
  readOffsetCommitRequest,
  readOffsetFetchRequest,
  writeOffsetCommitResponse,
  writeOffsetFetchResponse,
} from '@spool/kafka-protocol';
import type {
  OffsetCommitRequest as SpoolOffsetCommitRequest,
  OffsetCommitResponse as SpoolOffsetCommitResponse,
  OffsetFetchRequest as SpoolOffsetFetchRequest,
  OffsetFetchResponse as SpoolOffsetFetchResponse,
  ProtoError,
} from '@spool/protocol';
import type { ClassicMemberTable } from './classic-member-table';
import type { KafkaApi } from './kafka-api-dispatcher';
import type { KafkaClusterView } from './kafka-cluster-view';
import { classicErrorNumberOf } from './kafka-classic-groups';
import { KafkaErrorNumber, kafkaErrorNumberOf } from './kafka-errors';

const offsetCommitApiKey = 8;
const offsetFetchApiKey = 9;
/** The first versions that name topics by id. */
const commitTopicIdsVersion = 10;
const fetchTopicIdsVersion = 10;
/** The first OffsetCommit version that answers a consumer-group member's epoch (KIP-848). */
const commitMemberEpochVersion = 9;
/** The first OffsetFetch version with a list of groups (KIP-709). */
const fetchGroupsVersion = 8;
/** The first OffsetFetch version that names the member fetching (KIP-848). */
const fetchMemberVersion = 9;

export interface OffsetCoordinators {
  readonly offsetCommit: (request: SpoolOffsetCommitRequest) => Promise<SpoolOffsetCommitResponse>;
  readonly offsetFetch: (request: SpoolOffsetFetchRequest) => Promise<SpoolOffsetFetchResponse>;
}

export function offsetCommitApi(
  view: KafkaClusterView,
  members: ClassicMemberTable,
  coordinators: OffsetCoordinators,
): KafkaApi<OffsetCommitRequest, OffsetCommitResponse> {
  return {
    apiKey: offsetCommitApiKey,
    minVersion: 2,
    maxVersion: 10,
    read: readOffsetCommitRequest,
    write: writeOffsetCommitResponse,
    serve: async (request, version) => {
      // Point 1.
      const classic =
        request.memberId === ''
          ? undefined
          : members.get(request.groupId, request.memberId, Date.now());
      const memberEpoch =
        classic !== undefined && classic.generation === request.generationIdOrMemberEpoch
          ? classic.memberEpoch
          : request.generationIdOrMemberEpoch;
      const named = request.topics.map((topic) => ({
        topic,
        name: version >= commitTopicIdsVersion ? view.topicNameOf(topic.topicId) : topic.name,
      }));
      const committable = named.filter((entry) => entry.name !== undefined);
      const answer = await coordinators.offsetCommit({
        groupId: request.groupId,
        memberId: request.memberId,
        memberEpoch,
        offsets: committable.flatMap(({ topic, name }) =>
          topic.partitions.map((partition) => ({
            topic: name!,
            partition: partition.partitionIndex,
            offset: partition.committedOffset,
            metadata: partition.committedMetadata ?? '',
            leaderEpoch: partition.committedLeaderEpoch,
          })),
        ),
      });
      const errorNumberOf =
        classic === undefined && version >= commitMemberEpochVersion
          ? (error: ProtoError | undefined) => kafkaErrorNumberOf(error?.code)
          : classicErrorNumberOf;
      const errors = new Map(
        answer.results.map((result) => [
          `${result.partition}:${result.topic}`,
          errorNumberOf(result.error),
        ]),
      );
      return {
        ...defaultOffsetCommitResponse(),
        topics: named.map(({ topic, name }) => ({
          name: topic.name,
          topicId: topic.topicId,
          partitions: topic.partitions.map((partition) => ({
            partitionIndex: partition.partitionIndex,
            errorCode:
              name === undefined
                ? KafkaErrorNumber.UnknownTopicId
                : (errors.get(`${partition.partitionIndex}:${name}`) ?? 0),
          })),
        })),
      };
    },
  };
}

interface FetchedTopic {
  readonly name: string;
  readonly topicId: Buffer;
  readonly partitions: OffsetFetchResponsePartition[];
}

export function offsetFetchApi(
  view: KafkaClusterView,
  coordinators: OffsetCoordinators,
): KafkaApi<OffsetFetchRequest, OffsetFetchResponse> {
  /** One group's committed offsets: every one for null topics, else those named. */
  const fetchGroup = async (
    groupId: string,
    topics: Array<{ name: string; topicId: Buffer; partitionIndexes: number[] }> | null,
    byId: boolean,
    member?: { memberId: string; memberEpoch: number },
  ): Promise<{ errorCode: number; topics: FetchedTopic[] }> => {
    const named =
      topics?.map((topic) => ({
        topic,
        name: byId ? view.topicNameOf(topic.topicId) : topic.name,
      })) ?? null;
    const answer = await coordinators.offsetFetch({
      groupId,
      ...member,
      partitions:
        named === null
          ? []
          : named
              .filter((entry) => entry.name !== undefined)
              .flatMap(({ topic, name }) =>
                topic.partitionIndexes.map((partition) => ({ topic: name!, partition })),
              ),
    });
    // Point 3.
    const errorCode =
      member === undefined
        ? classicErrorNumberOf(answer.error)
        : kafkaErrorNumberOf(answer.error?.code);
    // Kafka answers a refused member with the group's error alone, no topics.
    if (member !== undefined && answer.error !== undefined) return { errorCode, topics: [] };
    const byTopic = new Map<string, OffsetFetchResponsePartition[]>();
    for (const committed of answer.offsets) {
      const list = byTopic.get(committed.topic) ?? [];
      list.push({
        partitionIndex: committed.partition,
        committedOffset: committed.offset,
        committedLeaderEpoch: -1,
        metadata: committed.metadata,
        errorCode: classicErrorNumberOf(committed.error),
      });
      byTopic.set(committed.topic, list);
    }
    if (named === null) {
      return {
        errorCode,
        topics: [...byTopic].map(([name, partitions]) => ({
          name,
          topicId: view.topicIdOf(name),
          partitions,
        })),
      };
    }
    return {
      errorCode,
      topics: named.map(({ topic, name }) => ({
        name: topic.name,
        topicId: topic.topicId,
        partitions: topic.partitionIndexes.map(
          (partitionIndex) =>
            byTopic.get(name ?? '')?.find((entry) => entry.partitionIndex === partitionIndex) ?? {
              partitionIndex,
              committedOffset: -1n,
              committedLeaderEpoch: -1,
              metadata: '',
              errorCode: name === undefined ? KafkaErrorNumber.UnknownTopicId : 0,
            },
        ),
      })),
    };
  };

  return {
    apiKey: offsetFetchApiKey,
    minVersion: 1,
    maxVersion: 10,
    read: readOffsetFetchRequest,
    write: writeOffsetFetchResponse,
    serve: async (request, version) => {
      // Point 2.
      if (version < fetchGroupsVersion) {
        const fetched = await fetchGroup(
          request.groupId,
          request.topics?.map((topic) => ({ ...topic, topicId: Buffer.alloc(16) })) ?? null,
          false,
        );
        return { ...defaultOffsetFetchResponse(), ...fetched };
      }
      const groups = await Promise.all(
        request.groups.map(async (group) => ({
          groupId: group.groupId,
          ...(await fetchGroup(
            group.groupId,
            group.topics,
            version >= fetchTopicIdsVersion,
            memberOf(group, version),
          )),
        })),
      );
      return { ...defaultOffsetFetchResponse(), groups };
    },
  };
}

/** Point 3: the member a group's fetch names, or undefined for a fetch that names none. */
function memberOf(
  group: { memberId: string | null; memberEpoch: number },
  version: number,
): { memberId: string; memberEpoch: number } | undefined {
  if (version < fetchMemberVersion) return undefined;
  if (group.memberId === null && group.memberEpoch < 0) return undefined;
  return { memberId: group.memberId ?? '', memberEpoch: group.memberEpoch };
}

import type { ConsumerGroupHeartbeatRequest } from '@spool/protocol';
import { SpoolError } from '@spool/common';
import { GroupErrorCode, invalidGroupRequest } from './group-errors';
import { partitionSetOf, type PartitionSet } from './partition-set';
import { compileSubscribedRegex } from './subscription';
import { assignorNames, type AssignorName, type GroupLimits } from './group-settings';
import type { MemberMetadata } from './member';

/**
 * A ConsumerGroupHeartbeat request checked field by field before the group acts on it, so a bad
 * request changes nothing and its error names the field. proto3 cannot tell an empty list from
 * an absent one, so every heartbeat carries the member's full subscription and everything it
 * owns (Kafka's "full request"); an empty subscription means the member subscribes to nothing.
 */
export interface HeartbeatRequest {
  memberId: string;
  memberEpoch: number;
  instanceId: string;
  /** Sorted, without duplicates. */
  subscribedTopics: string[];
  subscribedRegex: string;
  /** Compiled subscribedRegex; undefined when it is empty. */
  regex: RegExp | undefined;
  ownedPartitions: PartitionSet;
  /** 0 when the request sends none. */
  rebalanceTimeoutMs: number;
  /** undefined when the request names none. */
  assignor: AssignorName | undefined;
  metadata: MemberMetadata;
}

export function parseHeartbeatRequest(
  request: ConsumerGroupHeartbeatRequest,
  groupId: string,
  limits: GroupLimits,
  compileRegex: (pattern: string) => RegExp = (pattern) =>
    compileSubscribedRegex(pattern, limits.subscribedRegexLengthMax),
): HeartbeatRequest {
  if (request.groupId !== groupId) {
    throw invalidGroupRequest('groupId', `'${request.groupId}' is not group '${groupId}'`);
  }
  if (!Number.isInteger(request.memberEpoch) || request.memberEpoch < -2) {
    throw invalidGroupRequest(
      'memberEpoch',
      `${request.memberEpoch} is not 0 (join), -1 (leave), -2 (static leave) or a member epoch`,
    );
  }
  checkIdentifier('memberId', request.memberId, limits.identifierLengthMax);
  checkIdentifier('instanceId', request.instanceId, limits.identifierLengthMax);
  checkIdentifier('rackId', request.rackId, limits.identifierLengthMax);
  checkIdentifier('clientId', request.clientId, limits.identifierLengthMax);
  checkIdentifier('clientHost', request.clientHost, limits.identifierLengthMax);
  if (
    request.memberType !== '' &&
    request.memberType !== 'consumer' &&
    request.memberType !== 'classic'
  ) {
    throw invalidGroupRequest('memberType', `'${request.memberType}' is not consumer or classic`);
  }
  if (!Number.isInteger(request.rebalanceTimeoutMs) || request.rebalanceTimeoutMs < 0) {
    throw invalidGroupRequest(
      'rebalanceTimeoutMs',
      `${request.rebalanceTimeoutMs} is not a non-negative whole number of milliseconds`,
    );
  }
  return {
    memberId: request.memberId,
    memberEpoch: request.memberEpoch,
    instanceId: request.instanceId,
    subscribedTopics: parseSubscribedTopics(request, limits),
    subscribedRegex: request.subscribedRegex,
    regex: request.subscribedRegex === '' ? undefined : compileRegex(request.subscribedRegex),
    ownedPartitions: parseOwnedPartitions(request, limits),
    rebalanceTimeoutMs: request.rebalanceTimeoutMs,
    assignor: parseAssignor(request.assignor),
    metadata: {
      rackId: request.rackId,
      clientId: request.clientId,
      clientHost: request.clientHost,
      memberType: request.memberType === 'classic' ? 'classic' : 'consumer',
    },
  };
}

function checkIdentifier(field: string, value: string, lengthMax: number): void {
  if (value.length > lengthMax) {
    throw invalidGroupRequest(field, `is ${value.length} characters long; at most ${lengthMax}`);
  }
}

function parseSubscribedTopics(
  request: ConsumerGroupHeartbeatRequest,
  limits: GroupLimits,
): string[] {
  const topics = request.subscribedTopics;
  if (topics.length > limits.subscribedTopicsMax) {
    throw invalidGroupRequest(
      'subscribedTopics',
      `names ${topics.length} topics; at most ${limits.subscribedTopicsMax} are allowed`,
    );
  }
  if (topics.length > 0 && request.subscribedRegex !== '') {
    throw invalidGroupRequest(
      'subscribedTopics',
      'and subscribedRegex are both set; a member subscribes by names or by a regex',
    );
  }
  for (const topic of topics) {
    if (topic === '') throw invalidGroupRequest('subscribedTopics', 'contains an empty topic name');
  }
  return [...new Set(topics)].sort();
}

function parseOwnedPartitions(
  request: ConsumerGroupHeartbeatRequest,
  limits: GroupLimits,
): PartitionSet {
  const owned = request.ownedPartitions;
  if (owned.length > limits.ownedPartitionsMax) {
    throw invalidGroupRequest(
      'ownedPartitions',
      `lists ${owned.length} partitions; at most ${limits.ownedPartitionsMax} are allowed`,
    );
  }
  for (const { topic, partition } of owned) {
    if (topic === '') throw invalidGroupRequest('ownedPartitions', 'contains an empty topic name');
    if (!Number.isInteger(partition) || partition < 0) {
      throw invalidGroupRequest(
        'ownedPartitions',
        `partition ${partition} of '${topic}' is not a partition number`,
      );
    }
  }
  return partitionSetOf(owned);
}

function parseAssignor(assignor: string): AssignorName | undefined {
  if (assignor === '') return undefined;
  const known = assignorNames.find((name) => name === assignor);
  if (known === undefined) {
    throw new SpoolError(
      GroupErrorCode.UnsupportedAssignor,
      `assignor: '${assignor}' is not one of ${assignorNames.join(', ')}`,
      { details: { field: 'assignor' } },
    );
  }
  return known;
}

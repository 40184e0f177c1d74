import { SpoolError } from '@spool/common';

/**
 * The consumer group errors, with Kafka's codes, so a client that knows Kafka's consumer knows
 * what to do: UNKNOWN_MEMBER_ID and FENCED_MEMBER_EPOCH mean give up every partition and rejoin
 * with epoch 0; STALE_MEMBER_EPOCH means retry after the next heartbeat.
 */
export const GroupErrorCode = {
  UnknownMemberId: 'UNKNOWN_MEMBER_ID',
  FencedMemberEpoch: 'FENCED_MEMBER_EPOCH',
  StaleMemberEpoch: 'STALE_MEMBER_EPOCH',
  UnreleasedInstanceId: 'UNRELEASED_INSTANCE_ID',
  GroupMaxSizeReached: 'GROUP_MAX_SIZE_REACHED',
  UnsupportedAssignor: 'UNSUPPORTED_ASSIGNOR',
  NonEmptyGroup: 'NON_EMPTY_GROUP',
  InvalidRequest: 'INVALID_REQUEST',
  InvalidRegularExpression: 'INVALID_REGULAR_EXPRESSION',
} as const;

export function invalidGroupRequest(field: string, problem: string): SpoolError {
  return new SpoolError(GroupErrorCode.InvalidRequest, `${field}: ${problem}`, {
    details: { field },
  });
}

export function unknownMember(groupId: string, memberId: string): SpoolError {
  return new SpoolError(
    GroupErrorCode.UnknownMemberId,
    `member '${memberId}' is not a member of group '${groupId}'; rejoin with memberEpoch 0`,
  );
}

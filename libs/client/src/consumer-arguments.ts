import { ClientErrorCode, clientError, partitionName } from './errors';
import type { GroupSubscription } from './group-membership';

/** Checks of the consumer's arguments, and the group subscription sent to the coordinator. */

/** Topic names as they are; regular expressions joined into the one the coordinator takes. */
export function toGroupSubscription(patterns: readonly (string | RegExp)[]): GroupSubscription {
  const expressions = patterns.filter((pattern) => pattern instanceof RegExp);
  return {
    topics: [...new Set(patterns.filter((pattern) => typeof pattern === 'string'))],
    regex:
      expressions.length === 1
        ? expressions[0]!.source
        : expressions.map((expression) => `(?:${expression.source})`).join('|'),
  };
}

export function isTopicPattern(pattern: unknown): pattern is string | RegExp {
  return (typeof pattern === 'string' && pattern !== '') || pattern instanceof RegExp;
}

export function checkPartition(topic: string, partition: number): void {
  if (typeof topic !== 'string' || topic === '' || !Number.isInteger(partition) || partition < 0) {
    throw clientError(
      ClientErrorCode.InvalidRequest,
      `a partition needs a topic name and a partition number of 0 or more, got ` +
        `${String(topic)}[${String(partition)}]`,
    );
  }
}

export function checkOffset(topic: string, partition: number, offset: bigint): void {
  if (typeof offset !== 'bigint' || offset < 0n) {
    throw clientError(
      ClientErrorCode.InvalidRequest,
      `${partitionName(topic, partition)}: an offset must be a bigint of 0n or more, got ` +
        `${String(offset)}`,
    );
  }
}

import { SpoolError } from '@spool/common';
import { GroupErrorCode, invalidGroupRequest } from './group-errors';
import type { TopicPartitionCounts } from './group-settings';

/**
 * What a member subscribes to, and which existing topics that means. A regex subscription follows
 * Kafka's (KIP-848) RE2 semantics as far as a JavaScript RegExp allows: the pattern must match
 * the whole topic name, and constructs RE2 refuses (backreferences, lookaround) are refused here
 * too, which also keeps a client's pattern from backtracking without bound. A pattern refused
 * either way is INVALID_REGULAR_EXPRESSION, as Kafka 4 answers what RE2J cannot compile; a
 * JavaScript RegExp that takes the rest is an approximation of RE2J's syntax (a few constructs
 * differ in the details, such as the \Q...\E quoting RE2J has and JavaScript lacks). Internal
 * topics (names starting with "__", such as __consumer_offsets) never match a regex.
 */

const internalTopicPrefix = '__';

export function isInternalTopic(topic: string): boolean {
  return topic.startsWith(internalTopicPrefix);
}

/**
 * Compiles a subscribedRegex, or throws naming the field: INVALID_REGULAR_EXPRESSION for a
 * pattern RE2 would refuse, INVALID_REQUEST for one past Spool's length bound.
 */
export function compileSubscribedRegex(pattern: string, lengthMax: number): RegExp {
  if (pattern.length > lengthMax) {
    throw invalidGroupRequest(
      'subscribedRegex',
      `is ${pattern.length} characters long; at most ${lengthMax} are allowed`,
    );
  }
  const unsupported = unsupportedConstruct(pattern);
  if (unsupported !== undefined) {
    throw invalidRegularExpression(`'${pattern}' uses ${unsupported}, which RE2 does not support`);
  }
  try {
    return new RegExp(`^(?:${pattern})$`);
  } catch (error) {
    throw invalidRegularExpression(
      `'${pattern}' is not a valid regular expression (${(error as Error).message})`,
    );
  }
}

function invalidRegularExpression(problem: string): SpoolError {
  return new SpoolError(GroupErrorCode.InvalidRegularExpression, `subscribedRegex: ${problem}`, {
    details: { field: 'subscribedRegex' },
  });
}

/** The first construct in `pattern` that RE2 lacks, or undefined. Escaped characters are skipped. */
function unsupportedConstruct(pattern: string): string | undefined {
  for (let index = 0; index < pattern.length; index++) {
    const character = pattern[index];
    if (character === '\\') {
      const next = pattern[index + 1] ?? '';
      if (next >= '1' && next <= '9') return 'a backreference';
      if (next === 'k') return 'a named backreference';
      index++;
      continue;
    }
    if (character === '(' && pattern[index + 1] === '?') {
      const rest = pattern.slice(index + 2, index + 4);
      if (rest.startsWith('=') || rest.startsWith('!')) return 'a lookahead';
      if (rest === '<=' || rest === '<!') return 'a lookbehind';
    }
  }
  return undefined;
}

/**
 * The existing topics a subscription covers, with their partition counts. A named topic that
 * does not exist (yet) is left out; it joins the assignment when it is created.
 */
export function resolveSubscription(
  subscribedTopics: readonly string[],
  regex: RegExp | undefined,
  topics: TopicPartitionCounts,
): Map<string, number> {
  const resolved = new Map<string, number>();
  for (const topic of subscribedTopics) {
    const count = topics.partitionCount(topic);
    if (count !== undefined && count > 0) resolved.set(topic, count);
  }
  if (regex !== undefined) {
    for (const topic of matchingTopics(regex, topics)) {
      const count = topics.partitionCount(topic);
      if (count !== undefined && count > 0) resolved.set(topic, count);
    }
  }
  return resolved;
}

export function matchingTopics(regex: RegExp, topics: TopicPartitionCounts): string[] {
  const matches: string[] = [];
  for (const topic of topics.topicNames()) {
    if (!isInternalTopic(topic) && regex.test(topic)) matches.push(topic);
  }
  return matches;
}

import { assert } from '@spool/common';
import { isInternalTopic, resolveSubscription } from './subscription';
import type { TopicPartitionCounts } from './group-settings';

interface Subscription {
  subscribedTopics: string[];
  subscribedRegex: string;
}

/** A subscription as members share it, with how many members hold it. */
interface SharedSubscription extends Subscription {
  memberCount: number;
}

/**
 * Topic → partition count of every existing topic some member subscribes to (Kafka's
 * subscription metadata), and the existing topics each distinct subscription covers.
 */
interface SubscriptionMetadata {
  topics: Map<string, number>;
  bySubscription: Map<string, Set<string>>;
}

function emptyMetadata(): SubscriptionMetadata {
  return { topics: new Map(), bySubscription: new Map() };
}

export function subscriptionKey(subscription: Subscription): string {
  return `${subscription.subscribedRegex}\u0000${subscription.subscribedTopics.join('\u0000')}`;
}

/**
 * The distinct subscriptions of a group's members and what they resolve to. Members mostly
 * share a few subscriptions, so a heartbeat re-resolves each distinct one against the topics,
 * not each member: its cost does not grow with the group's size. The resolved metadata is not
 * persisted (which topics exist is the cluster's fact, not the group's), so after a replay it is
 * unknown until the group next sees topic metadata.
 */
export class GroupSubscriptions {
  private readonly shared = new Map<string, SharedSubscription>();
  private metadata: SubscriptionMetadata | undefined = emptyMetadata();

  get known(): boolean {
    return this.metadata !== undefined;
  }

  add(subscription: Subscription): void {
    const key = subscriptionKey(subscription);
    const shared = this.shared.get(key);
    if (shared === undefined) {
      this.shared.set(key, {
        subscribedTopics: subscription.subscribedTopics,
        subscribedRegex: subscription.subscribedRegex,
        memberCount: 1,
      });
    } else {
      shared.memberCount++;
    }
  }

  release(subscription: Subscription): void {
    const key = subscriptionKey(subscription);
    const shared = this.shared.get(key);
    assert(shared !== undefined, 'a member holds a counted subscription');
    shared.memberCount--;
    if (shared.memberCount === 0) this.shared.delete(key);
  }

  /** After a replay: the records say nothing about which topics exist. */
  forgetMetadata(): void {
    this.metadata = undefined;
  }

  /** After the group is deleted: no members, nothing subscribed. */
  resetMetadata(): void {
    this.metadata = emptyMetadata();
  }

  /**
   * Re-resolves every distinct subscription against `topics`. Returns whether the subscribed
   * topics or their partition counts changed, or undefined when nothing was known before.
   */
  refresh(
    topics: TopicPartitionCounts,
    compileRegex: (pattern: string) => RegExp,
  ): boolean | undefined {
    const metadata = emptyMetadata();
    for (const [key, subscription] of this.shared) {
      const regex =
        subscription.subscribedRegex === ''
          ? undefined
          : compileRegex(subscription.subscribedRegex);
      const resolved = resolveSubscription(subscription.subscribedTopics, regex, topics);
      for (const [topic, count] of resolved) metadata.topics.set(topic, count);
      metadata.bySubscription.set(key, new Set(resolved.keys()));
    }
    const previous = this.metadata;
    this.metadata = metadata;
    if (previous === undefined) return undefined;
    return !sameCounts(previous.topics, metadata.topics);
  }

  /** Whether some subscription names `topic` or has a regex that matches it. */
  covers(topic: string, compileRegex: (pattern: string) => RegExp): boolean {
    for (const subscription of this.shared.values()) {
      if (subscription.subscribedTopics.includes(topic)) return true;
      if (
        subscription.subscribedRegex !== '' &&
        !isInternalTopic(topic) &&
        compileRegex(subscription.subscribedRegex).test(topic)
      ) {
        return true;
      }
    }
    return false;
  }

  /** After members leave: keep only what the remaining subscriptions cover. */
  restrictToCurrentSubscriptions(): void {
    const previous = this.metadata;
    if (previous === undefined) return;
    const metadata = emptyMetadata();
    for (const key of this.shared.keys()) {
      const covered = previous.bySubscription.get(key);
      assert(covered !== undefined, 'every current subscription was resolved');
      metadata.bySubscription.set(key, covered);
      for (const topic of covered) metadata.topics.set(topic, previous.topics.get(topic)!);
    }
    this.metadata = metadata;
  }

  /** The existing topics a member's subscription covers. Only while the metadata is known. */
  topicsOf(subscription: Subscription): ReadonlySet<string> {
    assert(this.metadata !== undefined, 'subscription metadata is known');
    const topics = this.metadata.bySubscription.get(subscriptionKey(subscription));
    assert(topics !== undefined, 'the subscription was resolved');
    return topics;
  }

  /** Partition count of every subscribed topic. Only while the metadata is known. */
  partitionCounts(): ReadonlyMap<string, number> {
    assert(this.metadata !== undefined, 'subscription metadata is known');
    return this.metadata.topics;
  }
}

function sameCounts(
  left: ReadonlyMap<string, number>,
  right: ReadonlyMap<string, number>,
): boolean {
  if (left.size !== right.size) return false;
  for (const [topic, count] of left) if (right.get(topic) !== count) return false;
  return true;
}

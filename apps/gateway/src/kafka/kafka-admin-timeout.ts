/**
 * How CreateTopics, DeleteTopics and CreatePartitions honour their timeoutMs, as Kafka's broker
 * does: the change is made by the controller, then waited for in this gateway's metadata for up
 * to timeoutMs, so a client that creates a topic and uses it next finds it. A topic whose change
 * does not show in time is answered REQUEST_TIMED_OUT (the change is made all the same; a client
 * that retries sees TOPIC_ALREADY_EXISTS); a timeoutMs of 0 or less does not wait. validateOnly
 * changes nothing and waits for nothing.
 */
import type { MetadataLink } from '../metadata-link';
import { KafkaErrorNumber } from './kafka-errors';

/** The longest any admin request waits for its change, whatever its timeoutMs asks. */
export const adminTimeoutMsMax = 120_000;

/** How long to wait for a change of a request with this timeoutMs. */
export function metadataWaitMsOf(timeoutMs: number): number {
  return timeoutMs <= 0 ? 0 : Math.min(timeoutMs, adminTimeoutMsMax);
}

/** REQUEST_TIMED_OUT for a topic whose change is made but not yet shown. */
export function changeNotShown(
  topic: string,
  change: string,
  timeoutMs: number,
): { errorCode: number; errorMessage: string } {
  return {
    errorCode: KafkaErrorNumber.RequestTimedOut,
    errorMessage:
      `topic "${topic}" was ${change}, but the change did not show in this gateway's metadata ` +
      `within timeoutMs (${timeoutMs} ms)`,
  };
}

/** Whether a deleted topic is gone from this gateway's metadata. */
export function topicGone(link: MetadataLink, name: string): boolean {
  return !link.metadata.topics.has(name);
}

// What every controller handler shares: the way to the active controller, and the shape of a
// per-topic answer with Kafka's error names.
import type { SpoolError } from '@spool/common';
import type { ProtoError } from '@spool/protocol';
import type { ActiveController } from '../active-controller';
import type { ClusterState } from '../cluster-state';
import type { TopicOutcome } from '../topic-commands';

/** How the handlers reach the active controller: the role, once the controller has one. */
export interface ControllerAccess {
  requireActive(): Promise<{ controller: ActiveController; state: ClusterState }>;
  activeAddress(): Promise<string>;
}

/** A typed error as the wire carries it; none when there is none. */
export function protoError(error: SpoolError | undefined): ProtoError | undefined {
  return error === undefined
    ? undefined
    : { code: error.code, message: error.message, retriable: error.retriable };
}

/** Per-topic outcomes of a topic command as the wire carries them. */
export function topicResults(outcomes: readonly TopicOutcome[]) {
  return outcomes.map((outcome) => ({
    name: outcome.name,
    error: protoError(outcome.error),
    topicId: outcome.topicId ?? '',
  }));
}

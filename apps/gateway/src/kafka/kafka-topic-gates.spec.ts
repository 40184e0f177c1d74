// Proves the Fetch gate checks the answer as well as the request: an incremental fetch (KIP-227)
// names no partitions, yet its session serves the ones added earlier; once READ on their topic
// is revoked, the next fetch answers TOPIC_AUTHORIZATION_FAILED with no records for them.
import {
  AclOperation,
  AclPermissionType,
  PatternType,
  RequestAuthorizer,
  ResourceType,
} from '@spool/authorizer';
import type { Logger } from '@spool/common';
import {
  ApiKey,
  defaultFetchRequest,
  defaultFetchResponse,
  defaultFetchResponsePartitionData,
  type FetchRequest,
  type FetchResponse,
} from '@spool/kafka-protocol';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { GateOutcome } from './kafka-authorization';
import type { KafkaApiContext } from './kafka-api-dispatcher';
import type { KafkaClusterView } from './kafka-cluster-view';
import { KafkaErrorNumber } from './kafka-errors';
import { topicGates } from './kafka-topic-gates';

// Fetch v12 names topics, so the gate never asks the view for a topic id's name.
const fetchVersion = 12;
const context = { principal: 'User:alice', clientHost: '127.0.0.1' } as KafkaApiContext;

function readAcl(topic: string) {
  return {
    resourceType: ResourceType.Topic,
    resourceName: topic,
    patternType: PatternType.Literal,
    principal: 'User:alice',
    host: '*',
    operation: AclOperation.Read,
    permissionType: AclPermissionType.Allow,
  };
}

function fetchGate() {
  const entry = topicGates({} as KafkaClusterView).find(([apiKey]) => apiKey === ApiKey.Fetch);
  return entry![1] as unknown as (
    request: FetchRequest,
    version: number,
    context: KafkaApiContext,
    authorizer: RequestAuthorizer,
  ) => GateOutcome<FetchRequest, FetchResponse>;
}

/** What the session answers: one partition of `topic` with a record batch's bytes. */
function sessionAnswer(topic: string): FetchResponse {
  return {
    ...defaultFetchResponse(),
    responses: [
      {
        topic,
        topicId: Buffer.alloc(16),
        partitions: [
          {
            ...defaultFetchResponsePartitionData(),
            partitionIndex: 0,
            highWatermark: 3n,
            records: Buffer.from('batch bytes'),
          },
        ],
      },
    ],
  };
}

describe('the Fetch gate', () => {
  it('refuses a session partition whose READ was revoked after it joined the session', () => {
    const authorizer = new RequestAuthorizer({
      enabled: true,
      superUsers: [],
      allowEveryoneIfNoAclFound: false,
      logger: { warn: () => undefined } as unknown as Logger,
      metrics: new Registry(),
    });
    authorizer.replaceAcls([readAcl('orders')]);
    const incremental: FetchRequest = { ...defaultFetchRequest(), sessionId: 7, sessionEpoch: 2 };

    const allowed = fetchGate()(incremental, fetchVersion, context, authorizer);
    expect('complete' in allowed && allowed.complete(sessionAnswer('orders'))).toEqual(
      sessionAnswer('orders'),
    );

    authorizer.replaceAcls([]);
    const revoked = fetchGate()(incremental, fetchVersion, context, authorizer);
    if (!('complete' in revoked)) throw new Error('the gate refused the whole fetch');
    const partition = revoked.complete(sessionAnswer('orders')).responses[0]!.partitions[0]!;
    expect(partition.errorCode).toBe(KafkaErrorNumber.TopicAuthorizationFailed);
    expect(partition.partitionIndex).toBe(0);
    expect(partition.records).toEqual(Buffer.alloc(0));
  });
});

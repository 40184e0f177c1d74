// Proves that CreateTopics, DeleteTopics and CreatePartitions on the Kafka listener honour
// timeoutMs, through the APIs the listener registers: behind them a controller (a gRPC server of
// the test) that makes every change it is asked, while the gateway's metadata is applied by the
// test, so whether and when a change shows is the test's choice. A change that shows within
// timeoutMs is answered without error; one that does not is REQUEST_TIMED_OUT once timeoutMs has
// passed (at once for timeoutMs 0); validateOnly waits for nothing.
import { GrpcServer, SpoolError, createLogger } from '@spool/common';
import {
  type CreatePartitionsResponse,
  type CreateTopicsResponse,
  type DeleteTopicsResponse,
  defaultCreatableTopic,
  defaultCreatePartitionsRequest,
  defaultCreateTopicsRequest,
  defaultDeleteTopicsRequest,
} from '@spool/kafka-protocol';
import { ControllerServiceService } from '@spool/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetadataLink, type MetadataLink } from '../metadata-link';
import { testBroker, testSnapshot, testTopic } from '../testing/cluster-metadata';
import { adminApis } from './kafka-admin';
import { adminChangeApis } from './kafka-admin-changes';
import type { KafkaApi, KafkaApiContext } from './kafka-api-dispatcher';
import { fixedBrokerAddresses } from './kafka-broker-ports';
import { KafkaClusterView } from './kafka-cluster-view';

const logger = createLogger({ service: 'test', level: 'silent' });
const requestTimedOut = 7;
const topicId = '0123456789abcdef0123456789abcdef';

let metadataVersion = 1n;
let topics = [testTopic('existing', [1])];
function applyMetadata(): void {
  metadataVersion += 1n;
  link!.metadata.apply(testSnapshot(metadataVersion, [testBroker(1, 1, 1)], topics));
}

/** What the controller does after answering a change: show it after `showAfterMs`, or never. */
let showAfterMs: number | undefined;
function afterChange(change: () => void): void {
  if (showAfterMs === undefined) return;
  setTimeout(() => {
    change();
    applyMetadata();
  }, showAfterMs);
}

const controller = new GrpcServer(logger, { maxMessageBytes: 1 << 20, descriptorSetPaths: [] });
controller.addService(ControllerServiceService, {
  ...Object.fromEntries(
    Object.keys(ControllerServiceService).map((name) => [
      name,
      () => Promise.reject(new SpoolError('UNSUPPORTED_VERSION', `${name} is not in this test`)),
    ]),
  ),
  createTopics: async (request: { topics: Array<{ name: string; numPartitions: number }> }) => {
    afterChange(() => {
      for (const topic of request.topics) {
        topics.push(
          testTopic(
            topic.name,
            Array.from({ length: topic.numPartitions }, () => 1),
          ),
        );
      }
    });
    return { results: request.topics.map(({ name }) => ({ name, error: undefined, topicId })) };
  },
  deleteTopics: async (request: { names: string[] }) => {
    afterChange(() => (topics = topics.filter((topic) => !request.names.includes(topic.name))));
    return { results: request.names.map((name) => ({ name, error: undefined, topicId })) };
  },
  createPartitions: async (request: { topics: Array<{ name: string; count: number }> }) => {
    afterChange(() => {
      for (const grown of request.topics) {
        topics = topics.map((topic) =>
          topic.name === grown.name
            ? testTopic(
                topic.name,
                Array.from({ length: grown.count }, () => 1),
              )
            : topic,
        );
      }
    });
    return {
      results: request.topics.map(({ name }) => ({ name, error: undefined, topicId: '' })),
    };
  },
});
let link: MetadataLink | undefined;
let apis: Map<number, KafkaApi<unknown, unknown>>;

beforeAll(async () => {
  const port = await controller.listen('127.0.0.1', 0);
  link = createMetadataLink([`127.0.0.1:${port}`], logger);
  applyMetadata();
  const view = new KafkaClusterView(link, fixedBrokerAddresses('127.0.0.1', 9092));
  apis = new Map(
    [...adminApis(view), ...adminChangeApis({ link, storageClient: () => undefined })].map(
      (api) => [api.apiKey, api as unknown as KafkaApi<unknown, unknown>],
    ),
  );
});
afterAll(async () => {
  link?.stop();
  await controller.shutdown(100);
});

async function serve<Response>(apiKey: number, version: number, request: unknown) {
  const startedMs = Date.now();
  const response = (await apis
    .get(apiKey)!
    .serve(request, version, {} as KafkaApiContext)) as Response;
  return { response, elapsedMs: Date.now() - startedMs };
}

function createTopics(name: string, timeoutMs: number, validateOnly = false) {
  return serve<CreateTopicsResponse>(19, 7, {
    ...defaultCreateTopicsRequest(),
    topics: [{ ...defaultCreatableTopic(), name, numPartitions: 2, replicationFactor: 1 }],
    timeoutMs,
    validateOnly,
  });
}

describe('Kafka admin requests and their timeoutMs', () => {
  it('CreateTopics answers once the topic shows, REQUEST_TIMED_OUT when it does not in time', async () => {
    showAfterMs = 50;
    const shown = await createTopics('shown', 5_000);
    expect(shown.response.topics[0]!.errorCode).toBe(0);
    expect(shown.response.topics[0]!.numPartitions).toBe(2);

    showAfterMs = undefined;
    const late = await createTopics('never-shown', 300);
    expect(late.response.topics[0]).toMatchObject({ errorCode: requestTimedOut });
    expect(late.response.topics[0]!.errorMessage).toContain('timeoutMs (300 ms)');
    expect(late.elapsedMs).toBeGreaterThanOrEqual(290);

    const noWait = await createTopics('no-wait', 0);
    expect(noWait.response.topics[0]!.errorCode).toBe(requestTimedOut);
    expect(noWait.elapsedMs).toBeLessThan(2_000);

    const validated = await createTopics('validated', 0, true);
    expect(validated.response.topics[0]!.errorCode).toBe(0);
  });

  it('DeleteTopics and CreatePartitions wait for their change the same way', async () => {
    showAfterMs = 50;
    const grown = await serve<CreatePartitionsResponse>(37, 3, {
      ...defaultCreatePartitionsRequest(),
      topics: [{ name: 'existing', count: 3, assignments: null }],
      timeoutMs: 5_000,
    });
    expect(grown.response.results[0]!.errorCode).toBe(0);
    expect(link!.metadata.topics.get('existing')!.partitions).toHaveLength(3);

    const deleted = await serve<DeleteTopicsResponse>(20, 6, {
      ...defaultDeleteTopicsRequest(),
      topics: [{ name: 'existing', topicId: Buffer.alloc(16) }],
      timeoutMs: 5_000,
    });
    expect(deleted.response.responses[0]!.errorCode).toBe(0);

    showAfterMs = undefined;
    topics.push(testTopic('kept', [1]));
    applyMetadata();
    const notGrown = await serve<CreatePartitionsResponse>(37, 3, {
      ...defaultCreatePartitionsRequest(),
      topics: [{ name: 'kept', count: 4, assignments: null }],
      timeoutMs: 200,
    });
    expect(notGrown.response.results[0]!.errorCode).toBe(requestTimedOut);
    const notDeleted = await serve<DeleteTopicsResponse>(20, 6, {
      ...defaultDeleteTopicsRequest(),
      topics: [{ name: 'kept', topicId: Buffer.alloc(16) }],
      timeoutMs: 200,
    });
    expect(notDeleted.response.responses[0]!.errorCode).toBe(requestTimedOut);
  });
});

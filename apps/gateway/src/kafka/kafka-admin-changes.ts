/**
 * CreatePartitions, IncrementalAlterConfigs and DeleteRecords: the changes an admin client makes
 * to existing topics, through the gateway's own handlers (the controller for the first two, each
 * partition's leader for DeleteRecords).
 *
 * 1. CreatePartitions grows a topic to `count` partitions, placed by the controller; manual
 *    assignments are not served (INVALID_REQUEST, nothing changed).
 * 2. IncrementalAlterConfigs sets (operation 0) and deletes (1, back to the default) topic
 *    configs, and broker configs (kafka-broker-configs.ts); APPEND and SUBTRACT (2, 3) on list
 *    configs are not served: such a resource is INVALID_REQUEST and nothing of it changes.
 * 3. DeleteRecords moves each partition's log start offset to `offset` (-1: the high watermark).
 * 4. (Point 5 of kafka-admin.ts) CreatePartitions waits up to its timeoutMs for the new
 *    partitions to show in this gateway's metadata, REQUEST_TIMED_OUT after
 *    (kafka-admin-timeout.ts).
 */
import {
  type CreatePartitionsRequest,
  type CreatePartitionsResponse,
  type DeleteRecordsRequest,
  type DeleteRecordsResponse,
  type IncrementalAlterConfigsRequest,
  type IncrementalAlterConfigsResponse,
  defaultCreatePartitionsResponse,
  defaultDeleteRecordsResponse,
  defaultIncrementalAlterConfigsResponse,
  readCreatePartitionsRequest,
  readDeleteRecordsRequest,
  readIncrementalAlterConfigsRequest,
  writeCreatePartitionsResponse,
  writeDeleteRecordsResponse,
  writeIncrementalAlterConfigsResponse,
} from '@spool/kafka-protocol';
import { adminHandlers, topicShown } from '../admin-handlers';
import { changeNotShown, metadataWaitMsOf } from './kafka-admin-timeout';
import { handleDeleteRecords, type OffsetDependencies } from '../offset-handlers';
import type { KafkaApi } from './kafka-api-dispatcher';
import { alterBrokerResources, brokerResourceType } from './kafka-broker-configs';
import { KafkaErrorNumber, kafkaErrorNumberOf, kafkaErrorOf } from './kafka-errors';

const ApiKey = { DeleteRecords: 21, CreatePartitions: 37, IncrementalAlterConfigs: 44 } as const;
const topicResourceType = 2;
const ConfigOperation = { Set: 0, Delete: 1 } as const;

export function adminChangeApis(offsets: OffsetDependencies): Array<KafkaApi<never, never>> {
  const admin = adminHandlers(offsets.link);

  const createPartitions: KafkaApi<CreatePartitionsRequest, CreatePartitionsResponse> = {
    apiKey: ApiKey.CreatePartitions,
    minVersion: 0,
    maxVersion: 3,
    read: readCreatePartitionsRequest,
    write: writeCreatePartitionsResponse,
    serve: async (request) => {
      // Point 1.
      const growable = request.topics.filter((topic) => topic.assignments === null);
      const answer =
        growable.length === 0
          ? { results: [] }
          : await adminHandlers(
              offsets.link,
              request.validateOnly ? 0 : metadataWaitMsOf(request.timeoutMs),
            ).createPartitions({
              topics: growable.map((topic) => ({ name: topic.name, count: topic.count })),
              validateOnly: request.validateOnly,
            });
      const results = new Map(answer.results.map((result) => [result.name, result]));
      return {
        ...defaultCreatePartitionsResponse(),
        results: request.topics.map((topic) => {
          const result = results.get(topic.name);
          if (result === undefined) {
            return {
              name: topic.name,
              errorCode: KafkaErrorNumber.InvalidRequest,
              errorMessage: `topic "${topic.name}": manual partition assignments are not served`,
            };
          }
          // Point 4.
          if (
            !request.validateOnly &&
            result.error === undefined &&
            !topicShown(offsets.link, topic.name, topic.count)
          ) {
            return { name: topic.name, ...changeNotShown(topic.name, 'grown', request.timeoutMs) };
          }
          return { name: topic.name, ...kafkaErrorOf(result.error) };
        }),
      };
    },
  };

  const incrementalAlterConfigs: KafkaApi<
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse
  > = {
    apiKey: ApiKey.IncrementalAlterConfigs,
    minVersion: 0,
    maxVersion: 1,
    read: readIncrementalAlterConfigsRequest,
    write: writeIncrementalAlterConfigsResponse,
    serve: async (request) => {
      // Point 2.
      const servable = (resource: (typeof request.resources)[number]): boolean =>
        resource.resourceType === topicResourceType &&
        resource.configs.every(
          (config) =>
            config.configOperation === ConfigOperation.Delete ||
            (config.configOperation === ConfigOperation.Set && config.value !== null),
        );
      const alterable = request.resources.filter(servable);
      const [answer, brokerAnswers] = await Promise.all([
        alterable.length === 0
          ? { results: [] }
          : admin.alterConfigs({
              topics: alterable.map((resource) => ({
                topic: resource.resourceName,
                set: resource.configs
                  .filter((config) => config.configOperation === ConfigOperation.Set)
                  .map((config) => ({ name: config.name, value: config.value!, isDefault: false })),
                delete: resource.configs
                  .filter((config) => config.configOperation === ConfigOperation.Delete)
                  .map((config) => config.name),
              })),
              validateOnly: request.validateOnly,
            }),
        alterBrokerResources(
          admin,
          request.resources.filter((resource) => resource.resourceType === brokerResourceType),
          request.validateOnly,
        ),
      ]);
      const results = new Map(answer.results.map((result) => [result.name, result]));
      return {
        ...defaultIncrementalAlterConfigsResponse(),
        responses: request.resources.map((resource) => {
          const base = { resourceType: resource.resourceType, resourceName: resource.resourceName };
          if (resource.resourceType === brokerResourceType) {
            return { ...base, ...brokerAnswers.shift()! };
          }
          const result = servable(resource) ? results.get(resource.resourceName) : undefined;
          if (result === undefined) {
            return {
              ...base,
              errorCode: KafkaErrorNumber.InvalidRequest,
              errorMessage:
                'only topic and broker resources, and SET and DELETE of their configs, are ' +
                'served (no APPEND or SUBTRACT)',
            };
          }
          return { ...base, ...kafkaErrorOf(result.error) };
        }),
      };
    },
  };

  const deleteRecords: KafkaApi<DeleteRecordsRequest, DeleteRecordsResponse> = {
    apiKey: ApiKey.DeleteRecords,
    minVersion: 0,
    maxVersion: 2,
    read: readDeleteRecordsRequest,
    write: writeDeleteRecordsResponse,
    serve: async (request) => {
      // Point 3.
      const answer = await handleDeleteRecords(
        {
          partitions: request.topics.flatMap((topic) =>
            topic.partitions.map((partition) => ({
              topic: topic.name,
              partition: partition.partitionIndex,
              offset: partition.offset,
            })),
          ),
          timeoutMs: request.timeoutMs,
        },
        offsets,
      );
      let next = 0;
      return {
        ...defaultDeleteRecordsResponse(),
        topics: request.topics.map((topic) => ({
          name: topic.name,
          partitions: topic.partitions.map((partition) => {
            const result = answer.results[next++]!;
            return {
              partitionIndex: partition.partitionIndex,
              lowWatermark: result.lowWatermark,
              errorCode: kafkaErrorNumberOf(result.error?.code),
            };
          }),
        })),
      };
    },
  };

  return [createPartitions, incrementalAlterConfigs, deleteRecords] as unknown as Array<
    KafkaApi<never, never>
  >;
}

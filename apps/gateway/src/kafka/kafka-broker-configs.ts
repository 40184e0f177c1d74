/**
 * BROKER config resources (type 4) of DescribeConfigs and IncrementalAlterConfigs: the dynamic
 * broker configs the controller keeps (leader.replication.throttled.rate,
 * follower.replication.throttled.rate and replica.alter.log.dirs.io.max.bytes.per.second, which
 * throttles nothing: a storage node has one data directory), as `kafka-configs --entity-type
 * brokers` reads and changes them. A resource's name is a storage broker id, or "" for the
 * cluster-wide default (`--entity-default`). Any gateway answers for any broker: the controller
 * holds the values.
 *
 * 1. Describe asks the controller for each resource and for the default. A value set on the
 *    broker is DYNAMIC_BROKER_CONFIG, one it inherits and the default's own are
 *    DYNAMIC_DEFAULT_BROKER_CONFIG; with includeSynonyms each entry lists the values it is made
 *    of, the one in effect first, as Kafka lists them. A name set nowhere is not listed: the value
 *    in effect is the storage node's static setting, which the controller does not hold.
 * 2. Alter: SET and DELETE of a resource go to the controller as one change, which applies all or
 *    nothing. An unknown name is INVALID_CONFIG naming it; a static setting of the storage node
 *    (log.dirs, broker.id, ...) is INVALID_REQUEST "Cannot update these configs dynamically", as
 *    Kafka answers (the controller's broker-configs.ts decides both). APPEND and SUBTRACT are
 *    INVALID_REQUEST: no dynamic broker config is a list.
 */
import type { DescribeConfigsResult } from '@spool/kafka-protocol';
import {
  defaultDescribeConfigsResourceResult,
  defaultDescribeConfigsResult,
} from '@spool/kafka-protocol';
import type { ConfigEntry } from '@spool/protocol';
import type { adminHandlers } from '../admin-handlers';
import { KafkaErrorNumber, kafkaErrorOf } from './kafka-errors';

type AdminHandlers = ReturnType<typeof adminHandlers>;

export const brokerResourceType = 4;
/** Kafka's ConfigSource values for broker configs. */
const ConfigSource = { DynamicBroker: 2, DynamicDefaultBroker: 3 } as const;
/** Kafka's ConfigType of the dynamic broker configs Spool has (bytes per second: LONG). */
const configTypeLong = 5;
const configTypeUnknown = 0;
const brokerConfigTypes: ReadonlyMap<string, number> = new Map([
  ['leader.replication.throttled.rate', configTypeLong],
  ['follower.replication.throttled.rate', configTypeLong],
  ['replica.alter.log.dirs.io.max.bytes.per.second', configTypeLong],
]);
const ConfigOperation = { Set: 0, Delete: 1 } as const;

export interface DescribedBrokerResource {
  readonly resourceName: string;
  readonly configurationKeys: readonly string[] | null;
}

/** Point 1: one result per resource, in the order asked. */
export async function describeBrokerResources(
  admin: AdminHandlers,
  resources: readonly DescribedBrokerResource[],
  includeSynonyms: boolean,
): Promise<DescribeConfigsResult[]> {
  if (resources.length === 0) return [];
  const names = [...new Set(['', ...resources.map((resource) => resource.resourceName)])];
  const answer = await admin.describeBrokerConfigs({ brokers: names });
  const byName = new Map(answer.results.map((result) => [result.broker, result]));
  const defaults = new Map(
    (byName.get('')?.configs ?? []).map((entry): [string, string] => [entry.name, entry.value]),
  );
  return resources.map((resource): DescribeConfigsResult => {
    const base = {
      ...defaultDescribeConfigsResult(),
      resourceType: brokerResourceType,
      resourceName: resource.resourceName,
    };
    const described = byName.get(resource.resourceName);
    if (described === undefined || described.error !== undefined) {
      return { ...base, ...kafkaErrorOf(described?.error ?? missingAnswer(resource.resourceName)) };
    }
    const wanted =
      resource.configurationKeys === null ? undefined : new Set(resource.configurationKeys);
    const isDefaultResource = resource.resourceName === '';
    return {
      ...base,
      configs: described.configs
        .filter((entry) => wanted === undefined || wanted.has(entry.name))
        .map((entry) => describedEntry(entry, isDefaultResource, defaults, includeSynonyms)),
    };
  });
}

function describedEntry(
  entry: ConfigEntry,
  isDefaultResource: boolean,
  defaults: ReadonlyMap<string, string>,
  includeSynonyms: boolean,
) {
  const inherited = isDefaultResource || entry.isDefault;
  const source = inherited ? ConfigSource.DynamicDefaultBroker : ConfigSource.DynamicBroker;
  const synonyms = [{ name: entry.name, value: entry.value, source }];
  const defaultValue = defaults.get(entry.name);
  if (!inherited && defaultValue !== undefined) {
    synonyms.push({
      name: entry.name,
      value: defaultValue,
      source: ConfigSource.DynamicDefaultBroker,
    });
  }
  return {
    ...defaultDescribeConfigsResourceResult(),
    name: entry.name,
    value: entry.value,
    configSource: source,
    synonyms: includeSynonyms ? synonyms : [],
    configType: brokerConfigTypes.get(entry.name) ?? configTypeUnknown,
  };
}

export interface AlteredBrokerResource {
  readonly resourceName: string;
  readonly configs: ReadonlyArray<{
    readonly name: string;
    readonly configOperation: number;
    readonly value: string | null;
  }>;
}

/** Point 2: the error of each resource, in the order asked. */
export async function alterBrokerResources(
  admin: AdminHandlers,
  resources: readonly AlteredBrokerResource[],
  validateOnly: boolean,
): Promise<Array<{ errorCode: number; errorMessage: string | null }>> {
  const refusalOf = (resource: AlteredBrokerResource): string | undefined => {
    const unserved = resource.configs.find(
      (config) =>
        config.configOperation !== ConfigOperation.Delete &&
        !(config.configOperation === ConfigOperation.Set && config.value !== null),
    );
    if (unserved === undefined) return undefined;
    return (
      `broker config ${unserved.name}: only SET and DELETE are served ` +
      '(no dynamic broker config is a list)'
    );
  };
  const alterable = resources.filter((resource) => refusalOf(resource) === undefined);
  const answer =
    alterable.length === 0
      ? { results: [] }
      : await admin.alterBrokerConfigs({
          brokers: alterable.map((resource) => ({
            broker: resource.resourceName,
            set: resource.configs
              .filter((config) => config.configOperation === ConfigOperation.Set)
              .map((config) => ({ name: config.name, value: config.value!, isDefault: false })),
            delete: resource.configs
              .filter((config) => config.configOperation === ConfigOperation.Delete)
              .map((config) => config.name),
          })),
          validateOnly,
        });
  // The controller answers the changes in the order asked, one each.
  let next = 0;
  return resources.map((resource) => {
    const refusal = refusalOf(resource);
    if (refusal !== undefined) {
      return { errorCode: KafkaErrorNumber.InvalidRequest, errorMessage: refusal };
    }
    const result = answer.results[next++];
    return kafkaErrorOf(result === undefined ? missingAnswer(resource.resourceName) : result.error);
  });
}

function missingAnswer(resourceName: string): { code: string; message: string } {
  return {
    code: 'UNKNOWN_SERVER_ERROR',
    message: `the controller did not answer for broker resource "${resourceName}"`,
  };
}

/**
 * Dynamic broker configs from the SDK (Kafka's BROKER config resource, as `kafka-configs
 * --entity-type brokers` reads and changes it): settings a storage node takes without a restart,
 * such as the replication throttles leader.replication.throttled.rate and
 * follower.replication.throttled.rate. The controller keeps them, one set per broker and one
 * cluster-wide default (`--entity-default`), and validates every change: an unknown name, a static
 * setting or a bad value is refused whole, nothing written.
 *
 * A broker id of undefined means the cluster-wide default. A name set nowhere is not described:
 * the node runs on its static setting, which the controller does not hold.
 */
import type { ProtoError } from '@spool/protocol';
import type { ConfigEntryInput } from './admin';
import { fromProtoError } from './errors';
import type { GatewayCallOptions, GatewayConnection } from './gateway-connection';

/** Kafka's ConfigSource names for the two places a dynamic broker config comes from. */
export type BrokerConfigSource = 'DYNAMIC_BROKER_CONFIG' | 'DYNAMIC_DEFAULT_BROKER_CONFIG';

export interface BrokerConfigEntry {
  readonly name: string;
  readonly value: string;
  /** Set on the broker itself, or the cluster-wide default (inherited, or the default's own). */
  readonly source: BrokerConfigSource;
}

export interface BrokerConfigsDescription {
  /** undefined: the cluster-wide default. */
  readonly brokerId: number | undefined;
  /** The broker's own values and the defaults it inherits, sorted by name. */
  readonly configs: readonly BrokerConfigEntry[];
}

export interface BrokerConfigChange {
  readonly set?: readonly ConfigEntryInput[];
  /** Names removed from this resource: a broker falls back to the default, then its static value. */
  readonly delete?: readonly string[];
  /** Checked by the controller, nothing written. */
  readonly validateOnly?: boolean;
}

/** An answer without a result for the resource asked (a gateway or controller bug). */
const unanswered: ProtoError = {
  code: 'UNKNOWN_SERVER_ERROR',
  message: 'the answer has no result for it',
  retriable: false,
};

/** Kafka's resource name: the broker id, or "" for the cluster-wide default. */
function resourceNameOf(brokerId: number | undefined): string {
  return brokerId === undefined ? '' : String(brokerId);
}

function subjectOf(brokerId: number | undefined): string {
  return brokerId === undefined ? 'the cluster-wide broker default' : `broker ${brokerId}`;
}

export async function describeBrokerConfigs(
  connection: GatewayConnection,
  brokerId: number | undefined,
  options: GatewayCallOptions,
): Promise<BrokerConfigsDescription> {
  const resource = resourceNameOf(brokerId);
  const response = await connection.call(
    (client) => client.describeBrokerConfigs,
    { brokers: [resource] },
    options,
  );
  const result = response.results.find((each) => each.broker === resource);
  if (result === undefined || (result.error !== undefined && result.error.code !== '')) {
    throw fromProtoError(
      result?.error ?? unanswered,
      `describe the configs of ${subjectOf(brokerId)}`,
    );
  }
  return {
    brokerId,
    configs: result.configs.map((entry) => ({
      name: entry.name,
      value: entry.value,
      source:
        brokerId === undefined || entry.isDefault
          ? 'DYNAMIC_DEFAULT_BROKER_CONFIG'
          : 'DYNAMIC_BROKER_CONFIG',
    })),
  };
}

export async function alterBrokerConfigs(
  connection: GatewayConnection,
  brokerId: number | undefined,
  change: BrokerConfigChange,
  options: GatewayCallOptions,
): Promise<void> {
  const response = await connection.call(
    (client) => client.alterBrokerConfigs,
    {
      brokers: [
        {
          broker: resourceNameOf(brokerId),
          set: (change.set ?? []).map((entry) => ({ ...entry, isDefault: false })),
          delete: [...(change.delete ?? [])],
        },
      ],
      validateOnly: change.validateOnly ?? false,
    },
    options,
  );
  const error = response.results.length === 0 ? unanswered : response.results[0]!.error;
  if (error !== undefined && error.code !== '') {
    throw fromProtoError(error, `alter the configs of ${subjectOf(brokerId)}`);
  }
}

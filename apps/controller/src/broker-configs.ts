/**
 * Dynamic broker configs (Kafka's BROKER config resource, as `kafka-configs --entity-type
 * brokers`): settings that change without a restart. The cluster-wide default (resource "")
 * lives in the cluster record, each broker's own in its broker record (kept across its
 * registrations); a broker's value wins over the default. Storage nodes learn the values in effect
 * for them from every BrokerHeartbeatResponse, so a change applies within one heartbeat interval
 * and a node that restarts gets them back with its first heartbeat.
 *
 * A name set nowhere leaves the node on its static setting (its command line or file).
 */
import { SpoolError } from '@spool/common';
import type { ConfigEntry } from '@spool/protocol';
import type { ControllerContext } from './controller-context';
import { encodeRecord, type BrokerRecord, type ClusterRecord } from './metadata-records';

/** The dynamic broker configs, each with the check its value must pass. */
const brokerConfigChecks: Readonly<Record<string, (value: string) => string | undefined>> = {
  // Kafka's replication throttles, bytes/s per broker; 0 turns the throttle off.
  'leader.replication.throttled.rate': nonNegativeInteger,
  'follower.replication.throttled.rate': nonNegativeInteger,
  // Kafka's throttle of replicas moving between one broker's log directories (AlterReplicaLogDirs;
  // kafka-reassign-partitions --replica-alter-log-dirs-throttle sets it, --verify and --cancel
  // delete it). A storage node has one data directory and never moves a replica within itself, so
  // the value is kept and shown but throttles nothing.
  'replica.alter.log.dirs.io.max.bytes.per.second': nonNegativeInteger,
};

export const dynamicBrokerConfigNames: readonly string[] = Object.keys(brokerConfigChecks);

/**
 * Kafka broker configs that are a storage node's static settings (its command line or file) or
 * have no meaning in Spool's own processes: a change needs a restart, so it is refused as Kafka
 * refuses a config that cannot be updated dynamically (INVALID_REQUEST), not as an unknown name.
 */
const staticBrokerConfigNames: ReadonlySet<string> = new Set([
  'advertised.listeners',
  'broker.heartbeat.interval.ms',
  'broker.id',
  'broker.rack',
  'listeners',
  'log.cleaner.backoff.ms',
  'log.cleaner.dedupe.buffer.size',
  'log.cleaner.enable',
  'log.cleaner.io.max.bytes.per.second',
  'log.dir',
  'log.dirs',
  'log.retention.check.interval.ms',
  'node.id',
  'process.roles',
  'producer.id.expiration.check.interval.ms',
  'producer.id.expiration.ms',
  'replica.fetch.max.bytes',
  'replica.fetch.wait.max.ms',
  'replica.lag.time.max.ms',
]);

function nonNegativeInteger(value: string): string | undefined {
  if (!/^\d{1,15}$/.test(value)) return 'must be a non-negative integer (bytes per second)';
  return undefined;
}

export interface BrokerConfigChange {
  /** A broker id as a decimal string, or "" for the cluster-wide default. */
  readonly broker: string;
  readonly set: readonly { name: string; value: string }[];
  readonly delete: readonly string[];
}

export interface BrokerConfigsDescription {
  readonly broker: string;
  readonly error: SpoolError | undefined;
  readonly configs: ConfigEntry[];
}

/** The values in effect for a broker: its own over the cluster-wide default, sorted by name. */
export function effectiveBrokerConfigs(
  context: Pick<ControllerContext, 'state'>,
  brokerId: number,
): ConfigEntry[] {
  const defaults = context.state.cluster?.record.brokerConfigs ?? {};
  const own = context.state.brokers.get(brokerId)?.record.dynamicConfigs ?? {};
  const names = [...new Set([...Object.keys(defaults), ...Object.keys(own)])].sort();
  return names.map((name) => ({
    name,
    value: own[name] ?? defaults[name]!,
    isDefault: own[name] === undefined,
  }));
}

/** Each resource's dynamic configs; `brokers` empty means the default and every broker. */
export function describeBrokerConfigs(
  context: Pick<ControllerContext, 'state'>,
  brokers: readonly string[],
): BrokerConfigsDescription[] {
  const names =
    brokers.length > 0
      ? brokers
      : ['', ...[...context.state.brokers.keys()].sort((a, b) => a - b).map(String)];
  return names.map((broker) => {
    try {
      const brokerId = parseResource(context, broker);
      const configs =
        brokerId === undefined
          ? Object.entries(context.state.cluster?.record.brokerConfigs ?? {})
              .sort(([left], [right]) => left.localeCompare(right))
              .map(([name, value]) => ({ name, value, isDefault: false }))
          : effectiveBrokerConfigs(context, brokerId);
      return { broker, error: undefined, configs };
    } catch (error) {
      if (!(error instanceof SpoolError)) throw error;
      return { broker, error, configs: [] };
    }
  });
}

/**
 * Applies each change on its own (a refused one names its resource and setting), each guarded by
 * its record's mod revision. With `validateOnly` nothing is written.
 */
export async function alterBrokerConfigs(
  context: ControllerContext,
  changes: readonly BrokerConfigChange[],
  validateOnly: boolean,
): Promise<Array<{ broker: string; error: SpoolError | undefined }>> {
  const results: Array<{ broker: string; error: SpoolError | undefined }> = [];
  for (const change of changes) {
    try {
      const brokerId = parseResource(context, change.broker);
      const current =
        brokerId === undefined
          ? (context.state.cluster?.record.brokerConfigs ?? {})
          : (context.state.brokers.get(brokerId)!.record.dynamicConfigs ?? {});
      const next = changedConfigs(change, current);
      if (!validateOnly) await writeConfigs(context, brokerId, next);
      context.logger.info(
        { broker: change.broker === '' ? 'default' : change.broker, configs: next, validateOnly },
        'dynamic broker configs changed',
      );
      results.push({ broker: change.broker, error: undefined });
    } catch (error) {
      if (!(error instanceof SpoolError)) throw error;
      results.push({ broker: change.broker, error });
    }
  }
  return results;
}

/** The broker id a resource names, undefined for the cluster-wide default, or why not. */
function parseResource(
  context: Pick<ControllerContext, 'state'>,
  broker: string,
): number | undefined {
  if (broker === '') return undefined;
  if (!/^\d{1,9}$/.test(broker)) {
    throw new SpoolError(
      'INVALID_REQUEST',
      `broker config resource "${broker}" is neither a broker id nor "" (the cluster default)`,
    );
  }
  const brokerId = Number(broker);
  if (!context.state.brokers.has(brokerId)) {
    throw new SpoolError('BROKER_ID_NOT_REGISTERED', `broker ${brokerId} is not registered`);
  }
  return brokerId;
}

function changedConfigs(
  change: BrokerConfigChange,
  current: Readonly<Record<string, string>>,
): Record<string, string> {
  const resource = change.broker === '' ? 'the cluster default' : `broker ${change.broker}`;
  const next: Record<string, string> = { ...current };
  const names = [...change.set.map((entry) => entry.name), ...change.delete];
  const staticNames = names.filter((name) => staticBrokerConfigNames.has(name));
  if (staticNames.length > 0) {
    // Kafka's words (DynamicBrokerConfig), so tools and people who know them recognise it.
    throw new SpoolError(
      'INVALID_REQUEST',
      `${resource}: Cannot update these configs dynamically: ${staticNames.join(', ')} ` +
        "(a storage node's static settings: change them where it starts, then restart it)",
    );
  }
  for (const name of names) {
    if (brokerConfigChecks[name] === undefined) {
      throw new SpoolError(
        'INVALID_CONFIG',
        `${resource}: "${name}" is not a dynamic broker config ` +
          `(those are ${dynamicBrokerConfigNames.join(', ')})`,
      );
    }
  }
  for (const { name, value } of change.set) {
    const problem = brokerConfigChecks[name]!(value);
    if (problem !== undefined) {
      throw new SpoolError('INVALID_CONFIG', `${resource}: ${name}="${value}" ${problem}`);
    }
    next[name] = value;
  }
  for (const name of change.delete) delete next[name];
  return next;
}

async function writeConfigs(
  context: ControllerContext,
  brokerId: number | undefined,
  configs: Record<string, string>,
): Promise<void> {
  const keys = context.writer.metadataKeys;
  const hasConfigs = Object.keys(configs).length > 0;
  if (brokerId === undefined) {
    const cluster = context.state.cluster;
    if (cluster === undefined) {
      throw new SpoolError('NOT_CONTROLLER', 'the cluster record is not written yet; retry');
    }
    const { brokerConfigs: _previous, ...rest } = cluster.record;
    const record: ClusterRecord = hasConfigs ? { ...rest, brokerConfigs: configs } : rest;
    await context.writer.commit(
      [context.writer.unchangedSince(keys.cluster(), cluster.modRevision)],
      [{ kind: 'put', key: keys.cluster(), value: encodeRecord(record) }],
    );
    return;
  }
  const broker = context.state.brokers.get(brokerId)!;
  const { dynamicConfigs: _previous, ...rest } = broker.record;
  const record: BrokerRecord = hasConfigs ? { ...rest, dynamicConfigs: configs } : rest;
  await context.writer.commit(
    [context.writer.unchangedSince(keys.broker(brokerId), broker.modRevision)],
    [{ kind: 'put', key: keys.broker(brokerId), value: encodeRecord(record) }],
  );
}

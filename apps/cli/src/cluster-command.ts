import { callOnce, createGrpcClient } from '@spool/common';
import { GatewayServiceClient, type DescribeClusterResponse } from '@spool/protocol';
import { channelCredentialsOf, type TopicDescription } from '@spool/client';
import { UsageError } from './cli-errors';
import {
  connectReachableSpool,
  parseCommandArgs,
  requirePositionals,
  type GlobalOptions,
} from './cli-options';
import type { CommandHelp } from './command-help';
import type { CommandContext } from './commands';
import { formatTable, toJsonDocument } from './output';
import { partitionState, type PartitionState } from './topic-commands';

/**
 * `spool cluster status`: the brokers the controller knows, the active controller's address and
 * how many partitions are online, offline or under-replicated (from describing every topic).
 *
 * The controller's address is in the gateway's DescribeCluster response but not in the SDK's
 * ClusterDescription, so this one call goes to the gateway's gRPC API directly.
 */
export const clusterStatusHelp: CommandHelp = {
  path: ['cluster', 'status'],
  usage: 'spool cluster status',
  summary:
    'The brokers the controller knows (with their replicas and any decommission), the active ' +
    'controller and how many partitions are online, offline or under-replicated.',
  flags: {},
  examples: ['spool cluster status --gateway localhost:9090'],
};

export const clusterHelp: CommandHelp = {
  path: ['cluster'],
  usage: 'spool cluster status',
  summary: 'Brokers, the active controller and partition health.',
  flags: {},
  examples: ['spool cluster status'],
};

export const clusterSubcommandHelps: Readonly<Record<string, CommandHelp>> = {
  status: clusterStatusHelp,
};

const clusterUsage = clusterStatusHelp.usage;

/** How long the DescribeCluster call may take. */
const describeClusterDeadlineMs = 10_000;

export interface ClusterStatus {
  readonly clusterId: string;
  readonly controllerAddress: string;
  readonly brokers: readonly {
    readonly id: number;
    readonly rack: string;
    readonly state: string;
    readonly endpoints: readonly string[];
    /** Replicas the broker holds or is being given, internal topics included. */
    readonly replicas: number;
    /** Decommission: none, in progress (replicas left), or removable (it holds none). */
    readonly decommission: 'none' | 'in-progress' | 'removable';
  }[];
  readonly partitions: Readonly<Record<PartitionState, number>> & { readonly total: number };
  readonly topics: number;
}

export async function runClusterCommand(context: CommandContext): Promise<number> {
  const [subcommand, ...argv] = context.argv;
  if (subcommand !== 'status') {
    throw new UsageError(
      subcommand === undefined
        ? `cluster needs a subcommand; usage: ${clusterUsage}`
        : `unknown cluster subcommand "${subcommand}"; usage: ${clusterUsage}`,
    );
  }
  const parsed = parseCommandArgs(argv, clusterStatusHelp.flags, context.env ?? process.env);
  requirePositionals(parsed.positionals, [], clusterUsage);
  const spool = await connectReachableSpool(parsed.global);
  const cluster = await describeCluster(parsed.global);
  const admin = spool.admin();
  let topics: TopicDescription[];
  let internal: TopicDescription[];
  try {
    const names = await admin.listTopics();
    topics = names.length === 0 ? [] : await admin.describeTopics({ topics: names });
    // Replicas per broker count internal topics too: a broker holding them is not removable.
    const internalNames = (await admin.listTopics({ includeInternal: true })).filter(
      (name) => !names.includes(name),
    );
    internal =
      internalNames.length === 0 ? [] : await admin.describeTopics({ topics: internalNames });
  } finally {
    await admin.disconnect();
  }
  const status = toClusterStatus(cluster, topics, internal);
  context.stdout.write(parsed.global.json ? toJsonDocument(status) : formatClusterStatus(status));
  return 0;
}

async function describeCluster(global: GlobalOptions): Promise<DescribeClusterResponse> {
  const client = createGrpcClient(
    GatewayServiceClient,
    global.gateway,
    {},
    channelCredentialsOf(global.ssl, global.sasl),
  );
  try {
    return await callOnce(
      client,
      client.describeCluster,
      {},
      {
        deadlineMs: describeClusterDeadlineMs,
      },
    );
  } finally {
    client.close();
  }
}

export function toClusterStatus(
  cluster: DescribeClusterResponse,
  topics: readonly TopicDescription[],
  internalTopics: readonly TopicDescription[] = [],
): ClusterStatus {
  const partitions = { online: 0, offline: 0, 'under-replicated': 0, total: 0 };
  for (const topic of topics) {
    for (const partition of topic.partitions) {
      partitions[partitionState(partition)] += 1;
      partitions.total += 1;
    }
  }
  const replicas = new Map<number, number>();
  for (const topic of [...topics, ...internalTopics]) {
    for (const partition of topic.partitions) {
      for (const id of partition.replicas) replicas.set(id, (replicas.get(id) ?? 0) + 1);
    }
  }
  return {
    clusterId: cluster.clusterId,
    controllerAddress: cluster.controllerAddress,
    brokers: cluster.brokers.map((broker) => ({
      id: broker.brokerId,
      rack: broker.rack,
      state: broker.state,
      endpoints: broker.endpoints.map(
        (endpoint) => `${endpoint.name}://${endpoint.host}:${endpoint.port}`,
      ),
      replicas: replicas.get(broker.brokerId) ?? 0,
      decommission: !broker.decommissioned
        ? ('none' as const)
        : (replicas.get(broker.brokerId) ?? 0) === 0
          ? ('removable' as const)
          : ('in-progress' as const),
    })),
    partitions,
    topics: topics.length,
  };
}

export function formatClusterStatus(status: ClusterStatus): string {
  const brokers = formatTable(
    ['BROKER', 'RACK', 'STATE', 'REPLICAS', 'ENDPOINTS'],
    status.brokers.map((broker) => [
      broker.id,
      broker.rack === '' ? '-' : broker.rack,
      decommissionState(broker),
      broker.replicas,
      broker.endpoints.join(' '),
    ]),
  );
  const { online, offline, total } = status.partitions;
  return (
    `cluster     ${status.clusterId}\n` +
    `controller  ${status.controllerAddress === '' ? '-' : status.controllerAddress}\n\n` +
    brokers +
    `\npartitions  ${total} in ${status.topics} topics: ${online} online, ${offline} offline, ` +
    `${status.partitions['under-replicated']} under-replicated\n`
  );
}

/** The broker's state, or its decommission's when it has one. */
function decommissionState(broker: ClusterStatus['brokers'][number]): string {
  if (broker.decommission === 'removable') return `${broker.state},REMOVABLE`;
  if (broker.decommission === 'in-progress') return `${broker.state},DECOMMISSIONING`;
  return broker.state;
}

import type { Admin } from '@spool/client';
import { SpoolError } from '@spool/common';
import { brokerConfigHelp, runBrokerConfigCommand } from './broker-config-command';
import { UsageError } from './cli-errors';
import { connectSpool, parseCommandArgs, requirePositionals } from './cli-options';
import type { CommandHelp } from './command-help';
import type { CommandContext } from './commands';
import { toJsonDocument } from './output';
import { byTopic, currentEntries } from './partitions-command';
import { generatePlan } from './reassignment-plan';

/**
 * `spool broker decommission N`: marks broker N decommissioned (the controller places no new
 * replica on it) and reassigns every partition it holds, internal ones included, moving only
 * N's replica of each to the least loaded live broker that keeps the partition's racks apart
 * (same replication factor). Once the moves complete the broker holds nothing and `spool cluster
 * status` shows it REMOVABLE: the StatefulSet may then scale it away. `--cancel` clears the mark
 * (moves already done stay done).
 */
export const brokerDecommissionHelp: CommandHelp = {
  path: ['broker', 'decommission'],
  usage: 'spool broker decommission N [--cancel]',
  summary:
    'Move every replica off broker N and keep new ones away; it is removable once it holds none.',
  details: [
    'Progress: spool cluster status (DECOMMISSIONING with the replicas left, then REMOVABLE).',
  ],
  flags: {
    cancel: { type: 'boolean', description: 'clear the mark: the broker takes new replicas again' },
  },
  examples: ['spool broker decommission 3', 'spool broker decommission 3 --cancel'],
};

export const brokerHelp: CommandHelp = {
  path: ['broker'],
  usage: 'spool broker decommission N [--cancel] | config describe|set|delete [N|--default] ...',
  summary: "Empty a broker before it is removed; read and change brokers' dynamic configs.",
  flags: {},
  examples: ['spool broker decommission 3', 'spool broker config describe 1'],
};

export const brokerSubcommandHelps: Readonly<Record<string, CommandHelp>> = {
  decommission: brokerDecommissionHelp,
  config: brokerConfigHelp,
};

export async function runBrokerCommand(context: CommandContext): Promise<number> {
  const [subcommand, ...argv] = context.argv;
  if (subcommand === 'config') return runBrokerConfigCommand(argv, context);
  if (subcommand !== 'decommission') {
    throw new UsageError(
      subcommand === undefined
        ? `broker needs a subcommand; usage: ${brokerHelp.usage}`
        : `unknown broker subcommand "${subcommand}"; usage: ${brokerHelp.usage}`,
    );
  }
  const parsed = parseCommandArgs(argv, brokerDecommissionHelp.flags, context.env ?? process.env);
  const [raw] = requirePositionals(parsed.positionals, ['N'], brokerDecommissionHelp.usage);
  if (!/^\d+$/.test(raw!)) throw new UsageError(`N must be a broker id, got "${raw}"`);
  const brokerId = Number(raw);
  const admin = connectSpool(parsed.global).admin();
  try {
    if (parsed.values['cancel'] === true) {
      await admin.decommissionBroker(brokerId, { cancel: true });
      context.stdout.write(
        parsed.global.json
          ? toJsonDocument({ broker: brokerId, decommissioned: false })
          : `broker ${brokerId} takes new replicas again\n`,
      );
      return 0;
    }
    const moving = await decommission(admin, brokerId);
    context.stdout.write(
      parsed.global.json
        ? toJsonDocument({ broker: brokerId, decommissioned: true, moving })
        : `broker ${brokerId} is decommissioned: no new replicas go to it; ` +
            (moving.length === 0
              ? 'it holds none and is removable\n'
              : `moving ${moving.length} partitions off it (${moving.join(', ')}); it is ` +
                'removable once spool cluster status shows it REMOVABLE\n'),
    );
    return 0;
  } finally {
    await admin.disconnect();
  }
}

/** Marks the broker and starts the moves; returns the partitions moving off it. */
async function decommission(admin: Admin, brokerId: number): Promise<string[]> {
  const cluster = await admin.describeCluster();
  if (!cluster.brokers.some((broker) => broker.nodeId === brokerId)) {
    throw new SpoolError(
      'BROKER_ID_NOT_REGISTERED',
      `broker ${brokerId} is not in the cluster ` +
        `(brokers ${cluster.brokers.map((broker) => broker.nodeId).join(',')})`,
    );
  }
  const names = await admin.listTopics({ includeInternal: true });
  const topics = names.length === 0 ? [] : await admin.describeTopics({ topics: names });
  const candidates = cluster.brokers
    .filter(
      (broker) => broker.nodeId !== brokerId && broker.state === 'ALIVE' && !broker.decommissioned,
    )
    .map((broker) => ({ id: broker.nodeId, rack: broker.rack }));
  // Planned before the mark, so a cluster too small to hold the replicas elsewhere changes
  // nothing: the error names the partition.
  const plan = generatePlan(currentEntries(topics), candidates, {
    kind: 'evacuate',
    leavingBrokerId: brokerId,
  });
  await admin.decommissionBroker(brokerId);
  if (plan.partitions.length > 0) {
    await admin.alterPartitionReassignments({ topics: byTopic(plan.partitions) });
  }
  return plan.partitions.map((entry) => `${entry.topic}-${entry.partition}`);
}

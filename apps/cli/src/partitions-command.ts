import { readFileSync } from 'node:fs';
import type { Admin, TopicDescription } from '@spool/client';
import { SpoolError } from '@spool/common';
import { UsageError } from './cli-errors';
import {
  connectSpool,
  parseCommandArgs,
  requirePositionals,
  type ParsedCommand,
} from './cli-options';
import type { CommandHelp } from './command-help';
import type { CommandContext } from './commands';
import { toJsonDocument } from './output';
import {
  checkPlanAgainstCluster,
  formatPlan,
  generatePlan,
  parsePlan,
  type PlanEntry,
  type ReassignmentPlan,
} from './reassignment-plan';

/**
 * `spool partitions reassign`: Kafka's kafka-reassign-partitions in Spool's command line. Exactly
 * one action: --generate (print a plan that spreads the topics' replicas over the brokers),
 * --execute (start the plan's moves), --verify (exit 0 once every move is complete, 1 while any
 * remains, naming them) or --cancel (stop the plan's moves in progress).
 */
export const partitionsReassignHelp: CommandHelp = {
  path: ['partitions', 'reassign'],
  usage:
    'spool partitions reassign --generate --topics T[,T...] --brokers B[,B...] | ' +
    '--execute --plan FILE | --verify --plan FILE | --cancel --plan FILE',
  summary:
    'Move partitions between brokers (Kafka reassignment plans): generate, execute, verify, cancel.',
  details: [
    'The plan is Kafka\'s file: {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2,3]}]}.',
    '--generate writes the plan on stdout and the current assignment, to roll back with, on stderr.',
    '--verify exits 0 once every move of the plan is complete and 1 while any is in progress.',
  ],
  flags: {
    generate: { type: 'boolean', description: 'print a plan spreading --topics over --brokers' },
    execute: { type: 'boolean', description: "start the moves of --plan's file" },
    verify: { type: 'boolean', description: "check whether --plan's moves are complete" },
    cancel: { type: 'boolean', description: "cancel --plan's moves in progress" },
    topics: {
      type: 'string',
      valueName: 'T[,T...]',
      description: 'with --generate: the topics to place',
    },
    brokers: {
      type: 'string',
      valueName: 'B[,B...]',
      description: 'with --generate: the broker ids to place them on',
    },
    plan: { type: 'string', valueName: 'FILE', description: 'the reassignment plan (JSON)' },
  },
  examples: [
    'spool partitions reassign --generate --topics orders,payments --brokers 0,1,2,3 > plan.json',
    'spool partitions reassign --execute --plan plan.json',
    'spool partitions reassign --verify --plan plan.json',
  ],
};

export const partitionsHelp: CommandHelp = {
  path: ['partitions'],
  usage: 'spool partitions reassign <--generate|--execute|--verify|--cancel> [flags]',
  summary: 'Move partitions between brokers.',
  flags: {},
  examples: ['spool partitions reassign --verify --plan plan.json'],
};

export const partitionsSubcommandHelps: Readonly<Record<string, CommandHelp>> = {
  reassign: partitionsReassignHelp,
};

const actions = ['generate', 'execute', 'verify', 'cancel'] as const;
type Action = (typeof actions)[number];

export async function runPartitionsCommand(context: CommandContext): Promise<number> {
  const [subcommand, ...argv] = context.argv;
  if (subcommand !== 'reassign') {
    throw new UsageError(
      subcommand === undefined
        ? `partitions needs a subcommand; usage: ${partitionsHelp.usage}`
        : `unknown partitions subcommand "${subcommand}"; usage: ${partitionsHelp.usage}`,
    );
  }
  const parsed = parseCommandArgs(argv, partitionsReassignHelp.flags, context.env ?? process.env);
  requirePositionals(parsed.positionals, [], partitionsReassignHelp.usage);
  const action = chosenAction(parsed);
  const planFile = action === 'generate' ? undefined : planFlag(parsed);
  const plan = planFile === undefined ? undefined : readPlan(planFile);
  const admin = connectSpool(parsed.global).admin();
  try {
    switch (action) {
      case 'generate':
        return await generate(admin, parsed, context);
      case 'execute':
        return await execute(admin, plan!, planFile!, parsed, context);
      case 'verify':
        return await verify(admin, plan!, planFile!, parsed, context);
      case 'cancel':
        return await cancel(admin, plan!, planFile!, parsed, context);
    }
  } finally {
    await admin.disconnect();
  }
}

function chosenAction(parsed: ParsedCommand): Action {
  const chosen = actions.filter((action) => parsed.values[action] === true);
  if (chosen.length !== 1) {
    throw new UsageError(
      `give exactly one of --generate, --execute, --verify, --cancel; usage: ` +
        partitionsReassignHelp.usage,
    );
  }
  return chosen[0]!;
}

function planFlag(parsed: ParsedCommand): string {
  const file = parsed.values['plan'];
  if (typeof file !== 'string' || file === '') {
    throw new UsageError(`--plan FILE is needed; usage: ${partitionsReassignHelp.usage}`);
  }
  return file;
}

function readPlan(file: string): ReassignmentPlan {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read --plan ${file}: ${(error as Error).message}`);
  }
  return parsePlan(text, file);
}

/** A comma-separated list of ids or names, or a usage error naming the flag. */
function listFlag(parsed: ParsedCommand, name: string): string[] {
  const raw = parsed.values[name];
  if (typeof raw !== 'string' || raw.trim() === '') {
    throw new UsageError(`--generate needs --${name}; usage: ${partitionsReassignHelp.usage}`);
  }
  const items = raw.split(',').map((item) => item.trim());
  if (items.some((item) => item === '')) throw new UsageError(`--${name} has an empty item`);
  return items;
}

function brokerIdsFlag(parsed: ParsedCommand): number[] {
  const ids = listFlag(parsed, 'brokers').map((item) => {
    if (!/^\d+$/.test(item)) throw new UsageError(`--brokers: "${item}" is not a broker id`);
    return Number(item);
  });
  const duplicate = ids.find((id, index) => ids.indexOf(id) !== index);
  if (duplicate !== undefined) throw new UsageError(`--brokers names ${duplicate} twice`);
  return ids;
}

/** Each partition's replica set once its move is done: the target while moving. */
export function targetOf(partition: {
  readonly replicas: readonly number[];
  readonly removingReplicas: readonly number[];
}): number[] {
  return partition.replicas.filter((id) => !partition.removingReplicas.includes(id));
}

/** The current assignment of `topics` as plan entries (targets of moves in progress). */
export function currentEntries(topics: readonly TopicDescription[]): PlanEntry[] {
  return topics.flatMap((topic) =>
    topic.partitions.map((partition) => ({
      topic: topic.name,
      partition: partition.partition,
      replicas: targetOf(partition),
    })),
  );
}

async function generate(
  admin: Admin,
  parsed: ParsedCommand,
  context: CommandContext,
): Promise<number> {
  const topicNames = [...new Set(listFlag(parsed, 'topics'))];
  const brokerIds = brokerIdsFlag(parsed);
  const cluster = await admin.describeCluster();
  const brokers = brokerIds.map((id) => {
    const broker = cluster.brokers.find((candidate) => candidate.nodeId === id);
    if (broker === undefined) {
      throw new SpoolError(
        'INVALID_REPLICA_ASSIGNMENT',
        `--brokers: broker ${id} is not in the cluster ` +
          `(brokers ${cluster.brokers.map((known) => known.nodeId).join(',')})`,
      );
    }
    return { id, rack: broker.rack };
  });
  const topics = await admin.describeTopics({ topics: topicNames });
  const current = currentEntries(topics);
  const plan = generatePlan(current, brokers, { kind: 'balance' });
  context.stderr.write(
    'Current partition replica assignment (keep it to roll back):\n' +
      formatPlan({ version: 1, partitions: current }),
  );
  context.stdout.write(parsed.global.json ? toJsonDocument(plan) : formatPlan(plan));
  return 0;
}

/** Describes the plan's topics and checks every entry against them and the brokers. */
async function describePlanTopics(
  admin: Admin,
  plan: ReassignmentPlan,
  planFile: string,
): Promise<Map<string, TopicDescription>> {
  const names = [...new Set(plan.partitions.map((entry) => entry.topic))];
  const [cluster, listed] = await Promise.all([admin.describeCluster(), admin.listTopics()]);
  const existing = names.filter((name) => listed.includes(name));
  const topics = existing.length === 0 ? [] : await admin.describeTopics({ topics: existing });
  checkPlanAgainstCluster(
    plan,
    planFile,
    new Map(topics.map((topic) => [topic.name, topic.partitions.length])),
    cluster.brokers.map((broker) => broker.nodeId),
  );
  return new Map(topics.map((topic) => [topic.name, topic]));
}

async function execute(
  admin: Admin,
  plan: ReassignmentPlan,
  planFile: string,
  parsed: ParsedCommand,
  context: CommandContext,
): Promise<number> {
  const topics = await describePlanTopics(admin, plan, planFile);
  const rollback = plan.partitions.map((entry) => ({
    topic: entry.topic,
    partition: entry.partition,
    replicas: targetOf(
      topics.get(entry.topic)!.partitions.find((found) => found.partition === entry.partition)!,
    ),
  }));
  await admin.alterPartitionReassignments({ topics: byTopic(plan.partitions) });
  const names = plan.partitions.map((entry) => `${entry.topic}-${entry.partition}`);
  context.stdout.write(
    parsed.global.json
      ? toJsonDocument({ started: names, rollback: { version: 1, partitions: rollback } })
      : 'Current partition replica assignment (save it to roll back):\n' +
          formatPlan({ version: 1, partitions: rollback }) +
          `Started the reassignment of ${names.length} partitions: ${names.join(', ')}\n`,
  );
  return 0;
}

type VerifyState = 'complete' | 'in-progress' | 'differs';

async function verify(
  admin: Admin,
  plan: ReassignmentPlan,
  planFile: string,
  parsed: ParsedCommand,
  context: CommandContext,
): Promise<number> {
  const topics = await describePlanTopics(admin, plan, planFile);
  const results = plan.partitions.map((entry) => {
    const partition = topics
      .get(entry.topic)!
      .partitions.find((found) => found.partition === entry.partition)!;
    const moving = partition.addingReplicas.length + partition.removingReplicas.length > 0;
    const same =
      partition.replicas.length === entry.replicas.length &&
      entry.replicas.every((id, index) => partition.replicas[index] === id);
    const state: VerifyState = moving ? 'in-progress' : same ? 'complete' : 'differs';
    return { topic: entry.topic, partition: entry.partition, state, replicas: partition.replicas };
  });
  const remaining = results.filter((result) => result.state !== 'complete');
  if (parsed.global.json) {
    context.stdout.write(toJsonDocument({ complete: remaining.length === 0, partitions: results }));
  } else {
    for (const result of results) {
      const name = `${result.topic}-${result.partition}`;
      context.stdout.write(
        result.state === 'complete'
          ? `Reassignment of partition ${name} is complete.\n`
          : result.state === 'in-progress'
            ? `Reassignment of partition ${name} is still in progress (replicas ${result.replicas.join(',')}).\n`
            : `There is no reassignment of partition ${name} in progress, but its replicas are ` +
              `${result.replicas.join(',')} rather than the plan's.\n`,
      );
    }
    context.stdout.write(
      remaining.length === 0
        ? 'Every reassignment of the plan is complete.\n'
        : `${remaining.length} of ${results.length} partitions remain: ` +
            `${remaining.map((result) => `${result.topic}-${result.partition}`).join(', ')}\n`,
    );
  }
  return remaining.length === 0 ? 0 : 1;
}

async function cancel(
  admin: Admin,
  plan: ReassignmentPlan,
  planFile: string,
  parsed: ParsedCommand,
  context: CommandContext,
): Promise<number> {
  await describePlanTopics(admin, plan, planFile);
  const ongoing = await admin.listPartitionReassignments({
    topics: [...new Set(plan.partitions.map((entry) => entry.topic))],
  });
  const moving = plan.partitions.filter((entry) =>
    ongoing.some((found) => found.topic === entry.topic && found.partition === entry.partition),
  );
  if (moving.length > 0) {
    await admin.alterPartitionReassignments({
      topics: byTopic(moving.map((entry) => ({ ...entry, replicas: null }))),
    });
  }
  const cancelled = moving.map((entry) => `${entry.topic}-${entry.partition}`);
  const idle = plan.partitions
    .filter((entry) => !moving.includes(entry))
    .map((entry) => `${entry.topic}-${entry.partition}`);
  context.stdout.write(
    parsed.global.json
      ? toJsonDocument({ cancelled, notInProgress: idle })
      : `Cancelled the reassignment of ${cancelled.length} partitions` +
          (cancelled.length === 0 ? '' : `: ${cancelled.join(', ')}`) +
          (idle.length === 0 ? '' : `\nNot in progress: ${idle.join(', ')}`) +
          '\n',
  );
  return 0;
}

/** Plan entries grouped by topic, as the admin call takes them. */
export function byTopic(
  entries: readonly { topic: string; partition: number; replicas: readonly number[] | null }[],
) {
  const topics = new Map<string, { partition: number; replicas: readonly number[] | null }[]>();
  for (const entry of entries) {
    const partitions = topics.get(entry.topic) ?? [];
    partitions.push({ partition: entry.partition, replicas: entry.replicas });
    topics.set(entry.topic, partitions);
  }
  return [...topics].map(([topic, partitions]) => ({ topic, partitions }));
}

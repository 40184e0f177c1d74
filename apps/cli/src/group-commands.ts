import type { GroupDescription, GroupListing, GroupPartitionLag } from '@spool/client';
import { requirePositionals, type ParsedCommand } from './cli-options';
import { runAdminSubcommand, subcommandHelps, type AdminSubcommands } from './admin-subcommands';
import type { CommandHelp } from './command-help';
import type { CommandContext } from './commands';
import {
  formatResetPlan,
  parseResetArgs,
  planOffsetReset,
  resetOffsetsHelp,
} from './group-reset-offsets';
import { formatTable, toJsonDocument } from './output';

/**
 * `spool group list|describe|delete|reset-offsets`: the admin client's consumer group calls, as
 * kafka-consumer-groups offers them. `describe` shows per partition the committed offset, the
 * high watermark and the lag (high watermark minus committed offset), and which member owns it;
 * `reset-offsets` is a dry run that prints the plan unless --execute is given.
 *
 * JSON (--json) keeps offsets exact as decimal strings, as every spool command does; an offset
 * the group never committed is null.
 */
const subcommands: AdminSubcommands = {
  list: {
    help: {
      path: ['group', 'list'],
      usage: 'spool group list',
      summary: 'The consumer groups and their states.',
      flags: {},
      examples: ['spool group list'],
    },
    run: async (admin, parsed, context) => {
      requirePositionals(parsed.positionals, [], subcommands.list!.help.usage);
      const { groups } = await admin.listGroups();
      write(context, parsed, { groups }, formatGroupList(groups));
      return 0;
    },
  },
  describe: {
    help: {
      path: ['group', 'describe'],
      usage: 'spool group describe GROUP',
      summary:
        "A group's state, members and, per partition, the committed offset, the high watermark, " +
        'the lag and the owner.',
      details: [
        'A partition without a committed offset has an unknown lag ("-"; null with --json); the',
        "group's lag in the header adds up the known lags only.",
      ],
      flags: {},
      examples: ['spool group describe billing'],
    },
    run: async (admin, parsed, context) => {
      const [groupId] = requirePositionals(
        parsed.positionals,
        ['GROUP'],
        subcommands.describe!.help.usage,
      );
      const description = await admin.describeGroup(groupId!);
      write(context, parsed, toGroupJson(description), formatGroupDescription(description));
      return 0;
    },
  },
  delete: {
    help: {
      path: ['group', 'delete'],
      usage: 'spool group delete GROUP',
      summary: 'Delete a group without members and its committed offsets.',
      flags: {},
      examples: ['spool group delete billing'],
    },
    run: async (admin, parsed, context) => {
      const [groupId] = requirePositionals(
        parsed.positionals,
        ['GROUP'],
        subcommands.delete!.help.usage,
      );
      await admin.deleteGroup(groupId!);
      write(context, parsed, { groupId, deleted: true }, `deleted group ${groupId}\n`);
      return 0;
    },
  },
  'reset-offsets': {
    help: resetOffsetsHelp,
    run: async (admin, parsed, context) => {
      const settings = parseResetArgs(parsed);
      const plan = await planOffsetReset(admin, settings);
      if (settings.execute) {
        const applied = await admin.resetOffsets(settings.groupId, {
          strategy: settings.strategy,
          ...(settings.timestampMs === undefined ? {} : { timestampMs: settings.timestampMs }),
          ...(settings.offset === undefined ? {} : { offset: settings.offset }),
          partitions: plan.partitions.map(({ topic, partition }) => ({ topic, partition })),
        });
        const executed = {
          ...plan,
          partitions: plan.partitions.map((row) => ({
            ...row,
            newOffset:
              applied.find(
                (offset) => offset.topic === row.topic && offset.partition === row.partition,
              )?.offset ?? row.newOffset,
          })),
        };
        write(context, parsed, { ...executed, executed: true }, formatResetPlan(executed, true));
        return 0;
      }
      write(context, parsed, { ...plan, executed: false }, formatResetPlan(plan, false));
      return 0;
    },
  },
};

export const groupHelp: CommandHelp = {
  path: ['group'],
  usage: 'spool group <list|describe|delete|reset-offsets> [flags]',
  summary: 'List, describe (with lag), delete consumer groups and reset their offsets.',
  flags: {},
  examples: ['spool group describe billing'],
};

export const groupSubcommandHelps = subcommandHelps(subcommands);

/** Runs `spool group <subcommand> ...`; resolves with the exit code or throws to be reported. */
export function runGroupCommand(context: CommandContext): Promise<number> {
  return runAdminSubcommand('group', subcommands, context);
}

export function formatGroupList(groups: readonly GroupListing[]): string {
  if (groups.length === 0) return 'no consumer groups\n';
  return formatTable(
    ['GROUP', 'STATE'],
    groups.map((group) => [group.groupId, group.state]),
  );
}

/** The document `spool group describe --json` prints. */
export function toGroupJson(description: GroupDescription): unknown {
  return {
    groupId: description.groupId,
    state: description.state,
    groupEpoch: description.groupEpoch,
    members: description.members.map((member) => ({
      memberId: member.memberId,
      instanceId: member.instanceId === '' ? null : member.instanceId,
      memberEpoch: member.memberEpoch,
      assignment: member.assignment.map(({ topic, partition }) => ({ topic, partition })),
    })),
    partitions: description.partitions.map((row) => ({
      topic: row.topic,
      partition: row.partition,
      committedOffset: row.committedOffset < 0n ? null : row.committedOffset,
      highWatermark: row.highWatermark,
      lag: knownLag(row),
    })),
  };
}

/** A header line, the partitions with lag and owner (as kafka-consumer-groups), the members. */
export function formatGroupDescription(description: GroupDescription): string {
  const owners = new Map<string, string>();
  for (const member of description.members) {
    for (const { topic, partition } of member.assignment) {
      owners.set(`${topic}\u0000${partition}`, member.memberId);
    }
  }
  const lags = description.partitions.map(knownLag);
  const lagTotal = lags.reduce<bigint>((sum, lag) => sum + (lag ?? 0n), 0n);
  const unknownLags = lags.filter((lag) => lag === null).length;
  const lagText =
    unknownLags === 0
      ? `lag ${lagTotal}`
      : unknownLags === lags.length
        ? 'lag -'
        : `lag ${lagTotal} (${unknownLags} of ${lags.length} partitions without a committed offset not counted)`;
  const header =
    `group ${description.groupId}  state ${description.state}  epoch ${description.groupEpoch}` +
    `  members ${description.members.length}  ${lagText}\n`;
  const partitions =
    description.partitions.length === 0
      ? 'no partitions: the group has no committed offsets and no assignment\n'
      : formatTable(
          ['TOPIC', 'PARTITION', 'COMMITTED-OFFSET', 'HIGH-WATERMARK', 'LAG', 'MEMBER'],
          description.partitions.map((row) => [
            row.topic,
            row.partition,
            row.committedOffset < 0n ? '-' : row.committedOffset.toString(),
            row.highWatermark.toString(),
            knownLag(row)?.toString() ?? '-',
            owners.get(`${row.topic}\u0000${row.partition}`) ?? '-',
          ]),
        );
  const members =
    description.members.length === 0
      ? ''
      : `\n${formatTable(
          ['MEMBER', 'INSTANCE', 'EPOCH', 'PARTITIONS'],
          description.members.map((member) => [
            member.memberId,
            member.instanceId === '' ? '-' : member.instanceId,
            member.memberEpoch,
            member.assignment.length === 0
              ? '-'
              : member.assignment.map(({ topic, partition }) => `${topic}[${partition}]`).join(','),
          ]),
        )}`;
  return `${header}${partitions}${members}`;
}

/**
 * A partition's lag, or null when it is unknown: without a committed offset there is no
 * position to measure from (kafka-consumer-groups prints "-" too). Never negative: a committed
 * offset past a high watermark the gateway read a moment earlier counts as no lag.
 */
export function knownLag(row: GroupPartitionLag): bigint | null {
  if (row.committedOffset < 0n) return null;
  const lag = row.highWatermark - row.committedOffset;
  return lag < 0n ? 0n : lag;
}

function write(context: CommandContext, parsed: ParsedCommand, json: unknown, text: string): void {
  context.stdout.write(parsed.global.json ? toJsonDocument(json) : text);
}

import type { Admin, OffsetResetStrategy } from '@spool/client';
import { UsageError } from './cli-errors';
import { requirePositionals, type ParsedCommand } from './cli-options';
import type { CommandHelp } from './command-help';
import { formatTable } from './output';

/**
 * `spool group reset-offsets`, as kafka-consumer-groups --reset-offsets: a dry run by default
 * that prints, per partition, the committed offset now and where the reset would move it; with
 * --execute the coordinator applies it (only while the group has no members: NON_EMPTY_GROUP
 * otherwise) and the offsets it committed are printed.
 *
 * --topic T takes every partition of T, --topic T:0,2 those partitions; it may be repeated.
 * --to-datetime takes ISO 8601 (2026-11-30T08:00:00Z); without a zone it is local time, as in
 * Kafka's tool. Where no record is that recent, the partition moves to its high watermark.
 * --to-offset beyond the log is clamped into [log start, high watermark], as Kafka's tool does.
 */
export const resetOffsetsHelp: CommandHelp = {
  path: ['group', 'reset-offsets'],
  usage:
    'spool group reset-offsets GROUP --topic T[:P,P...]... ' +
    '(--to-earliest|--to-latest|--to-datetime ISO|--to-offset N) [--execute]',
  summary:
    "Move a group's committed offsets; a dry run that prints the plan unless --execute is given.",
  details: ['The group must have no members for --execute (NON_EMPTY_GROUP otherwise).'],
  flags: {
    topic: {
      type: 'string',
      multiple: true,
      valueName: 'T[:P,P...]',
      description: 'every partition of topic T, or those listed; repeat for more topics',
    },
    'to-earliest': { type: 'boolean', description: "to each partition's log start offset" },
    'to-latest': { type: 'boolean', description: "to each partition's high watermark" },
    'to-datetime': {
      type: 'string',
      valueName: 'ISO',
      description: 'to the first record at or after this time, e.g. 2026-11-30T08:00:00Z',
    },
    'to-offset': {
      type: 'string',
      valueName: 'N',
      description: 'to this offset, clamped into [log start, high watermark]',
    },
    execute: { type: 'boolean', description: 'apply the plan instead of printing it only' },
  },
  examples: ['spool group reset-offsets billing --topic orders --to-earliest --execute'],
};

const resetOffsetsUsage = resetOffsetsHelp.usage;

export interface ResetSettings {
  readonly groupId: string;
  readonly topics: readonly { topic: string; partitions: readonly number[] | undefined }[];
  readonly strategy: OffsetResetStrategy;
  readonly timestampMs: number | undefined;
  readonly offset: bigint | undefined;
  readonly execute: boolean;
}

export interface ResetPlanRow {
  readonly topic: string;
  readonly partition: number;
  /** null: the group has no committed offset for the partition. */
  readonly currentOffset: bigint | null;
  readonly newOffset: bigint;
}

export interface ResetPlan {
  readonly groupId: string;
  /** The group's state, or NONE when the coordinator does not know it yet. */
  readonly state: string;
  readonly members: number;
  readonly strategy: OffsetResetStrategy;
  readonly partitions: readonly ResetPlanRow[];
}

const isoDateTime =
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:?\d{2})?$/;

export function parseResetArgs(parsed: ParsedCommand): ResetSettings {
  const [groupId] = requirePositionals(parsed.positionals, ['GROUP'], resetOffsetsUsage);
  const values = parsed.values;
  const chosen = (['to-earliest', 'to-latest', 'to-datetime', 'to-offset'] as const).filter(
    (flag) => values[flag] !== undefined && values[flag] !== false,
  );
  if (chosen.length !== 1) {
    throw new UsageError(
      `reset-offsets needs exactly one of --to-earliest, --to-latest, --to-datetime, ` +
        `--to-offset${chosen.length > 1 ? `, got ${chosen.map((flag) => `--${flag}`).join(' and ')}` : ''}`,
    );
  }
  const rawTopics = (values.topic as string[] | undefined) ?? [];
  if (rawTopics.length === 0) {
    throw new UsageError(`reset-offsets needs --topic; usage: ${resetOffsetsUsage}`);
  }
  const flag = chosen[0]!;
  let timestampMs: number | undefined;
  let offset: bigint | undefined;
  if (flag === 'to-datetime') {
    const raw = values['to-datetime'] as string;
    timestampMs = isoDateTime.test(raw) ? Date.parse(raw) : Number.NaN;
    if (!Number.isFinite(timestampMs) || timestampMs < 0) {
      throw new UsageError(
        `--to-datetime must be an ISO 8601 date and time such as 2026-11-30T08:00:00Z, got "${raw}"`,
      );
    }
  }
  if (flag === 'to-offset') {
    const raw = values['to-offset'] as string;
    if (!/^\d+$/.test(raw) || BigInt(raw) > 2n ** 63n - 1n) {
      throw new UsageError(`--to-offset must be an offset of 0 or more, got "${raw}"`);
    }
    offset = BigInt(raw);
  }
  const strategies: Record<typeof flag, OffsetResetStrategy> = {
    'to-earliest': 'earliest',
    'to-latest': 'latest',
    'to-datetime': 'timestamp',
    'to-offset': 'offset',
  };
  return {
    groupId: groupId!,
    topics: rawTopics.map(parseTopicFlag),
    strategy: strategies[flag],
    timestampMs,
    offset,
    execute: values.execute === true,
  };
}

/** `T` or `T:0,2`. */
function parseTopicFlag(raw: string): { topic: string; partitions: number[] | undefined } {
  const match = /^([^:]+)(?::(\d+(?:,\d+)*))?$/.exec(raw);
  if (match === null) {
    throw new UsageError(`--topic must be TOPIC or TOPIC:P,P..., got "${raw}"`);
  }
  const partitions = match[2]?.split(',').map(Number);
  if (partitions !== undefined && partitions.some((partition) => partition > 0x7fffffff)) {
    throw new UsageError(`--topic has a partition number out of range, got "${raw}"`);
  }
  return { topic: match[1]!, partitions };
}

/** What the reset would do: read the log bounds and the group's offsets, change nothing. */
export async function planOffsetReset(admin: Admin, settings: ResetSettings): Promise<ResetPlan> {
  const descriptions = await admin.describeTopics({
    topics: settings.topics.map(({ topic }) => topic),
  });
  const group = await admin.describeGroup(settings.groupId).catch((error: unknown) => {
    if ((error as { code?: string }).code === 'GROUP_ID_NOT_FOUND') return undefined;
    throw error;
  });
  const committed = new Map<string, bigint>();
  for (const row of group?.partitions ?? []) {
    if (row.committedOffset >= 0n)
      committed.set(keyOf(row.topic, row.partition), row.committedOffset);
  }
  const rows: ResetPlanRow[] = [];
  for (const selection of settings.topics) {
    const existing = descriptions
      .find((description) => description.name === selection.topic)!
      .partitions.map(({ partition }) => partition);
    const missing = selection.partitions?.find((partition) => !existing.includes(partition));
    if (missing !== undefined) {
      throw Object.assign(
        new Error(
          `topic ${selection.topic} has no partition ${missing} (it has ${existing.length})`,
        ),
        { code: 'UNKNOWN_TOPIC_OR_PARTITION' },
      );
    }
    const partitions = selection.partitions ?? existing;
    const bounds = await admin.fetchTopicOffsets(selection.topic);
    const byTimestamp =
      settings.strategy === 'timestamp'
        ? await admin.fetchTopicOffsetsByTimestamp(selection.topic, settings.timestampMs!)
        : [];
    for (const partition of [...new Set(partitions)].sort((left, right) => left - right)) {
      const bound = bounds.find((candidate) => candidate.partition === partition)!;
      rows.push({
        topic: selection.topic,
        partition,
        currentOffset: committed.get(keyOf(selection.topic, partition)) ?? null,
        newOffset: resetTarget(settings, bound.low, bound.high, () => {
          return byTimestamp.find((candidate) => candidate.partition === partition)?.offset ?? -1n;
        }),
      });
    }
  }
  return {
    groupId: settings.groupId,
    state: group?.state ?? 'NONE',
    members: group?.members.length ?? 0,
    strategy: settings.strategy,
    partitions: rows,
  };
}

/** Where one partition moves: Kafka's tool's rules. */
export function resetTarget(
  settings: Pick<ResetSettings, 'strategy' | 'offset'>,
  logStartOffset: bigint,
  highWatermark: bigint,
  offsetForTimestamp: () => bigint,
): bigint {
  switch (settings.strategy) {
    case 'earliest':
      return logStartOffset;
    case 'latest':
      return highWatermark;
    case 'timestamp': {
      const found = offsetForTimestamp();
      return found < 0n ? highWatermark : found;
    }
    case 'offset': {
      const offset = settings.offset!;
      if (offset < logStartOffset) return logStartOffset;
      return offset > highWatermark ? highWatermark : offset;
    }
  }
}

export function formatResetPlan(plan: ResetPlan, executed: boolean): string {
  const header = `group ${plan.groupId}  state ${plan.state}  strategy ${plan.strategy}\n`;
  const table = formatTable(
    ['TOPIC', 'PARTITION', 'CURRENT-OFFSET', 'NEW-OFFSET'],
    plan.partitions.map((row) => [
      row.topic,
      row.partition,
      row.currentOffset === null ? '-' : row.currentOffset.toString(),
      row.newOffset.toString(),
    ]),
  );
  if (executed) return `${header}${table}reset ${plan.partitions.length} partitions\n`;
  const warning =
    plan.members > 0
      ? `group ${plan.groupId} has ${plan.members} members: --execute needs the group empty ` +
        `(stop its consumers first)\n`
      : '';
  return `${header}${table}dry run: nothing was changed; add --execute to apply\n${warning}`;
}

function keyOf(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

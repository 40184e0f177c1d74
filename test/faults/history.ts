import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';

/**
 * The history of a fault run, in the spirit of Jepsen's: every operation the workload invoked and
 * how it completed, every record the consumer group delivered and every offset it committed, the
 * nemesis's faults, and at the end what the log and its replicas hold. One JSON object per line,
 * appended as it happens (so a run that dies leaves its history behind); the checker reads
 * nothing else. Offsets are decimal strings (they are int64 in the protocol).
 *
 * At thousands of records per second one line per record would make the history of a long run
 * gigabytes, so a line holds one send (its records, in order, all to one partition) or a run of
 * records at consecutive offsets (a delivered batch, a stretch of the final read): `offset` is
 * the first record's, and `values[i]` sits at `offset + i`.
 */
export type HistoryEvent =
  /** A producer called send for these records, all to one partition. */
  | { type: 'invoke'; timeMs: number; producer: number; values: string[]; partition: number }
  /** The send was acknowledged (acks=all): values[i] at offset + i. */
  | {
      type: 'ok';
      timeMs: number;
      producer: number;
      values: string[];
      partition: number;
      offset: string;
    }
  /** The send failed; its records may or may not have been written. */
  | {
      type: 'fail';
      timeMs: number;
      producer: number;
      values: string[];
      partition: number;
      error: string;
    }
  /**
   * The consumer group handed these records, at consecutive offsets from `offset`, to a member
   * (before the member processed them).
   */
  | {
      type: 'deliver';
      timeMs: number;
      consumer: number;
      partition: number;
      offset: string;
      values: string[];
    }
  /** A commit the coordinator acknowledged: the next offset to read in the partition. */
  | { type: 'commit'; timeMs: number; consumer: number; partition: number; offset: string }
  /** A fault started (phase start) or was healed (phase heal). */
  | {
      type: 'nemesis';
      timeMs: number;
      phase: 'start' | 'heal';
      fault: FaultKind;
      target: string;
      detail?: string;
    }
  /**
   * A step of a recovery that a service or the SDK logged (read from the logs after the run,
   * milestones.ts): when it ended, and how long it took where the log says (an election's
   * writes, a shard's load, a retry's back-off).
   */
  | {
      type: 'milestone';
      timeMs: number;
      kind: MilestoneKind;
      source: string;
      durationMs?: number;
    }
  /** Workload phases: faults begin, faults end (everything healed), the final reads begin. */
  | { type: 'phase'; timeMs: number; phase: 'workload' | 'healed' | 'final' }
  /**
   * The final read of a partition from its start up to its high watermark: records at
   * consecutive offsets from `offset`.
   */
  | { type: 'read'; timeMs: number; partition: number; offset: string; values: string[] }
  /** The high watermark of a partition when the final read was made. */
  | { type: 'high-watermark'; timeMs: number; partition: number; offset: string }
  /**
   * The replicas of a partition compared byte for byte below the high watermark after the final
   * heal; `differing` names the replicas whose bytes differ from the leader's (or fall short).
   */
  | {
      type: 'replicas';
      timeMs: number;
      partition: number;
      highWatermark: string;
      compared: readonly number[];
      differing: readonly number[];
      detail?: string;
    };

export type MilestoneKind =
  /** The controller fenced a broker (session expired or its stream closed) and moved leaders. */
  | 'broker-fenced'
  /** The controller removed coordinators (session expired) and moved their shards. */
  | 'coordinators-removed'
  /** A leader shrank an ISR (a follower lagged past replica.lag.time.max.ms). */
  | 'isr-shrunk'
  /** A leader took a caught-up follower back into an ISR. */
  | 'isr-expanded'
  /** A controller took over. */
  | 'controller-active'
  /** The controller elected leaders of offline partitions. */
  | 'leaders-elected'
  /** A storage node became a partition's leader. */
  | 'replica-leader'
  /** The gateway applied metadata that changed a leader, a broker or a shard's owner. */
  | 'gateway-metadata'
  /** A coordinator finished loading an offsets shard. */
  | 'shard-loaded'
  /** A consumer's group membership became stable (reconciled). */
  | 'member-stable'
  /** The SDK backed off to retry a produce batch, or to open a new consume stream. */
  | 'produce-retry'
  | 'consume-retry';

export type FaultKind = 'kill' | 'pause' | 'partition' | 'disk-full' | 'slow-disk';
export const faultKinds: readonly FaultKind[] = [
  'kill',
  'pause',
  'partition',
  'disk-full',
  'slow-disk',
];

/** Appends events to a JSON lines file, synchronously, so the file is whole up to a crash. */
export class HistoryWriter {
  private readonly fd: number;
  count = 0;

  constructor(readonly path: string) {
    this.fd = openSync(path, 'a');
  }

  // A distributive Omit keeps each event's own fields.
  append(event: HistoryEventInput): void {
    const line = `${JSON.stringify({ ...event, timeMs: Date.now() })}\n`;
    writeSync(this.fd, line);
    this.count++;
  }

  /** Appends an event that carries its own time (a milestone read from a log afterwards). */
  appendAt(event: HistoryEventInput & { timeMs: number }): void {
    writeSync(this.fd, `${JSON.stringify(event)}\n`);
    this.count++;
  }

  close(): void {
    closeSync(this.fd);
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
export type HistoryEventInput = DistributiveOmit<HistoryEvent, 'timeMs'>;

export function readHistory(path: string): HistoryEvent[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as HistoryEvent);
}

/** Records grouped into runs at consecutive offsets, for `deliver` and `read` events. */
export function consecutiveRuns(
  records: ReadonlyArray<{ offset: bigint; value: string }>,
): Array<{ offset: bigint; values: string[] }> {
  const runs: Array<{ offset: bigint; values: string[] }> = [];
  for (const record of records) {
    const last = runs.at(-1);
    if (last !== undefined && last.offset + BigInt(last.values.length) === record.offset) {
      last.values.push(record.value);
    } else {
      runs.push({ offset: record.offset, values: [record.value] });
    }
  }
  return runs;
}

import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';

/**
 * The history of a fault run, in the spirit of Jepsen's: every operation the workload invoked and
 * how it completed, every record the consumer group delivered and every offset it committed, the
 * nemesis's faults, and at the end what the log and its replicas hold. One JSON object per line,
 * appended as it happens (so a run that dies leaves its history behind); the checker reads
 * nothing else. Offsets are decimal strings (they are int64 in the protocol).
 */
export type HistoryEvent =
  /** A producer called send for one record. */
  | { type: 'invoke'; timeMs: number; producer: number; value: string; partition: number }
  /** The send was acknowledged (acks=all) at this offset. */
  | {
      type: 'ok';
      timeMs: number;
      producer: number;
      value: string;
      partition: number;
      offset: string;
    }
  /** The send failed; the record may or may not have been written. */
  | {
      type: 'fail';
      timeMs: number;
      producer: number;
      value: string;
      partition: number;
      error: string;
    }
  /** The consumer group handed this record to a member (before the member processed it). */
  | {
      type: 'deliver';
      timeMs: number;
      consumer: number;
      partition: number;
      offset: string;
      value: string;
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
  /** Workload phases: faults begin, faults end (everything healed), the final reads begin. */
  | { type: 'phase'; timeMs: number; phase: 'workload' | 'healed' | 'final' }
  /** The final read of a partition from its start up to its high watermark, record by record. */
  | { type: 'read'; timeMs: number; partition: number; offset: string; value: string }
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

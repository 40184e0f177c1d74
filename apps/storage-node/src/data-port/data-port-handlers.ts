// What the data port asks of the storage node: the handlers that answer FETCH and
// OFFSET_FOR_LEADER_EPOCH. The server owns the connection (frames, order, backpressure, idle
// and shutdown); the handlers own the meaning (leadership, epochs, long polls, reads).
import type {
  DataPortFetchPartitionHeader,
  DataPortFetchRequest,
  DataPortFetchSessionResponse,
  DataPortOffsetForLeaderEpochRequest,
  DataPortOffsetForLeaderEpochResponse,
} from '@spool/protocol';
import type { FileSlice } from '@spool/segment-store';

/** One partition of a fetch answer: the header fields, and its records as file slices. */
export interface FetchPartitionResult extends Omit<
  DataPortFetchPartitionHeader,
  'recordsSizeBytes'
> {
  /** Whole batches in offset order, as `Log.read` returns them; empty with an error. */
  readonly slices: readonly FileSlice[];
  /** The sum of the slices' sizes: the partition's recordsSizeBytes on the wire. */
  readonly sizeBytes: number;
}

/** A fetch answer. The server calls `release` exactly once: after the bytes were sent or failed. */
export interface FetchResult {
  readonly partitions: readonly FetchPartitionResult[];
  /**
   * The fetch-session answer: present exactly when the request carried session fields (a v1
   * request), since the response's layout follows the request's version.
   */
  readonly session?: DataPortFetchSessionResponse;
  /** Lets go of the files behind every slice (`LogReadResult.release` of each read). */
  release(): void;
}

export interface DataPortHandlers {
  /**
   * Answers a fetch; a long poll is the handler's job: it resolves once it has minBytes or
   * maxWaitMs passed. Records in all partitions together stay within maxBytes, except the first
   * batch of the first non-empty partition (Kafka's KIP-74); a client refuses more. Per-partition
   * failures are error codes in the result. `signal` fires when the connection or the server
   * closes: the handler should then settle soon, and whatever it resolves with is released
   * unsent. A rejection is answered with the error's code for every requested partition.
   */
  fetch(request: DataPortFetchRequest, signal: AbortSignal): Promise<FetchResult>;

  /** Answers where each requested leader epoch ends (KIP-101); as `fetch` for signal and errors. */
  offsetForLeaderEpoch(
    request: DataPortOffsetForLeaderEpochRequest,
    signal: AbortSignal,
  ): Promise<DataPortOffsetForLeaderEpochResponse>;
}

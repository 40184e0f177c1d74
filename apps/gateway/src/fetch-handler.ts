import { isRetriable } from '@spool/errors';
import { SpoolError, wireErrorOf } from '@spool/common';
/**
 * Fetch: a long poll over partitions that may have different leaders. The gateway reads through
 * each leader's data port and passes the batches on as the leader stored them.
 *
 * 1. Each partition is routed from the metadata; one named twice, an unknown topic or partition,
 *    or one without a leader is answered with its error and not fetched.
 * 2. The partitions of one leader go in one data-port fetch with an equal share of maxBytes; the
 *    leaders are asked concurrently.
 * 3. First every leader is read at once (maxWaitMs 0). When that holds minBytes, or an error,
 *    or the request does not wait, it is the answer: a complete picture of every partition.
 * 4. Otherwise the leaders are long-polled for the rest of maxWaitMs, each for the bytes still
 *    missing given what the others already returned. The answer goes out as soon as the latest
 *    answers hold minBytes or an error: a consumer must not wait out one leader's long poll for
 *    data another leader already returned. The polls still open are abandoned; their partitions
 *    keep the first read's answer.
 * 5. Records stay within maxBytes in all, except that the first batch comes whole (KIP-74).
 */
import {
  type DataPortFetchedPartition,
  type FetchedPartition,
  type FetchPartition,
  type FetchRequest,
  type FetchResponse,
  type ProtoError,
} from '@spool/protocol';
import { trimToBytes } from './batch-spans';
import { FetchAbandoned, type LeaderFetcher } from './leader-fetcher';
import type { MetadataLink } from './metadata-link';
import { duplicatePositions, groupByLeader, partitionName, routeOf } from './partition-routing';

/** The longest long poll, whatever a request asks (Kafka's fetch.max.wait.ms is 500 by default). */
export const fetchMaxWaitMsMax = 30_000;
/** Kafka's max.partition.fetch.bytes default, for a partition that names no bound. */
export const partitionFetchBytesDefault = 1_048_576;

export interface FetchDependencies {
  readonly link: MetadataLink;
  readonly fetcher: LeaderFetcher;
  /** The gateway's bound on records in one response (fetchMaxBytes). */
  readonly fetchMaxBytes: number;
}

export function emptyPartition(key: { topic: string; partition: number }, error?: ProtoError) {
  return {
    topic: key.topic,
    partition: key.partition,
    error,
    highWatermark: -1n,
    logStartOffset: -1n,
    records: Buffer.alloc(0),
  } satisfies FetchedPartition;
}

/** A leader's answer for one partition as the client's FetchedPartition. */
export function fetchedFromLeader(answer: DataPortFetchedPartition): FetchedPartition {
  if (answer.errorCode === '') {
    return {
      topic: answer.topic,
      partition: answer.partition,
      error: undefined,
      highWatermark: answer.highWatermark,
      logStartOffset: answer.logStartOffset,
      records: answer.records,
    };
  }
  const name = partitionName(answer);
  return {
    ...emptyPartition(answer, {
      code: answer.errorCode,
      message: answer.errorMessage.includes(name)
        ? answer.errorMessage
        : `${name}: ${answer.errorMessage}`,
      retriable: isRetriable(answer.errorCode),
    }),
    highWatermark: answer.highWatermark,
    logStartOffset: answer.logStartOffset,
  };
}

interface RoutedPartition {
  readonly position: number;
  readonly leaderId: number;
  readonly wanted: FetchPartition;
}

/** The answers of one Fetch so far, by request position. */
class FetchAnswers {
  readonly byPosition: Array<FetchedPartition | undefined>;

  constructor(
    private readonly request: FetchRequest,
    private readonly minBytes: number,
  ) {
    this.byPosition = new Array<FetchedPartition | undefined>(request.partitions.length);
  }

  set(answers: ReadonlyMap<number, FetchedPartition>): void {
    for (const [position, answer] of answers) this.byPosition[position] = answer;
  }

  bytesOf(entries: readonly RoutedPartition[]): number {
    return entries.reduce(
      (sum, entry) => sum + (this.byPosition[entry.position]?.records.length ?? 0),
      0,
    );
  }

  /** minBytes are here, or an error the client should hear about at once. */
  enough(routed: readonly RoutedPartition[]): boolean {
    return (
      this.bytesOf(routed) >= this.minBytes ||
      this.byPosition.some((answer) => answer?.error !== undefined)
    );
  }

  /** Every partition's answer; one never answered has no records and no error. */
  final(): FetchedPartition[] {
    return this.request.partitions.map(
      (wanted, position) => this.byPosition[position] ?? emptyPartition(wanted),
    );
  }
}

export async function handleFetch(
  request: FetchRequest,
  dependencies: FetchDependencies,
): Promise<FetchResponse> {
  const startedMs = Date.now();
  checkFetchBounds(request);
  const maxWaitMs = Math.min(request.maxWaitMs, fetchMaxWaitMsMax);
  const minBytes = request.minBytes;
  const maxBytes =
    request.maxBytes > 0
      ? Math.min(request.maxBytes, dependencies.fetchMaxBytes)
      : dependencies.fetchMaxBytes;
  const answers = new FetchAnswers(request, minBytes);
  const routed = routeFetch(request, dependencies, answers);
  const groups = groupByLeader(routed, (entry) => entry.leaderId);
  if (groups.size > 0) {
    const shareBytes = Math.ceil(maxBytes / groups.size);
    // Point 3.
    const reads = await Promise.all(
      [...groups].map(([leaderId, entries]) =>
        fetchGroup(dependencies.fetcher, leaderId, entries, {
          maxWaitMs: 0,
          minBytes: 0,
          maxBytes: shareBytes,
        }),
      ),
    );
    reads.forEach((read) => answers.set(read));
    const remainingWaitMs = maxWaitMs - (Date.now() - startedMs);
    if (!answers.enough(routed) && remainingWaitMs > 0) {
      await pollLeaders(dependencies.fetcher, groups, answers, {
        maxWaitMs: remainingWaitMs,
        minBytes,
        shareBytes,
        routed,
      });
    }
  }
  // Point 5.
  return { partitions: trimToBytes(answers.final(), maxBytes) };
}

/**
 * A negative wait or size is a client bug, not a wish for the default: refuse the request and
 * name the field. Zero keeps meaning "the gateway's default" for maxBytes (proto3's unset).
 */
function checkFetchBounds(request: FetchRequest): void {
  for (const field of ['maxWaitMs', 'minBytes', 'maxBytes'] as const) {
    if (request[field] < 0) {
      throw new SpoolError('INVALID_REQUEST', `${field} is ${request[field]}; it must be ≥ 0`);
    }
  }
}

/** Point 1: answers what cannot be fetched; returns the partitions to fetch, with leaders. */
function routeFetch(
  request: FetchRequest,
  dependencies: FetchDependencies,
  answers: FetchAnswers,
): RoutedPartition[] {
  const duplicates = duplicatePositions(request.partitions);
  const routed: RoutedPartition[] = [];
  request.partitions.forEach((wanted, position) => {
    let error: SpoolError | undefined;
    if (duplicates.has(position)) {
      error = new SpoolError('INVALID_REQUEST', `${partitionName(wanted)} appears more than once`);
    } else if (wanted.partitionMaxBytes < 0) {
      error = new SpoolError(
        'INVALID_REQUEST',
        `partitionMaxBytes of ${partitionName(wanted)} is ${wanted.partitionMaxBytes}; it must be ≥ 0`,
      );
    } else {
      const route = routeOf(dependencies.link.metadata, wanted, 'data');
      if (route.kind === 'leader') routed.push({ position, leaderId: route.leaderId, wanted });
      else error = route.error;
    }
    if (error !== undefined) {
      answers.set(new Map([[position, emptyPartition(wanted, wireErrorOf(error))]]));
    }
  });
  return routed;
}

/**
 * Point 4: long polls at every leader, each for the bytes still missing given what the others
 * returned; resolves once the answers are enough or every poll ended, abandoning the rest.
 */
async function pollLeaders(
  fetcher: LeaderFetcher,
  groups: ReadonlyMap<number, RoutedPartition[]>,
  answers: FetchAnswers,
  options: {
    maxWaitMs: number;
    minBytes: number;
    shareBytes: number;
    routed: readonly RoutedPartition[];
  },
): Promise<void> {
  const abandon = new AbortController();
  const firstReadBytes = answers.bytesOf(options.routed);
  await new Promise<void>((resolve) => {
    let polling = groups.size;
    for (const [leaderId, entries] of groups) {
      const missingBytes = options.minBytes - (firstReadBytes - answers.bytesOf(entries));
      fetchGroup(
        fetcher,
        leaderId,
        entries,
        {
          maxWaitMs: options.maxWaitMs,
          minBytes: Math.max(1, missingBytes),
          maxBytes: options.shareBytes,
        },
        abandon.signal,
      )
        .then((poll) => {
          if (abandon.signal.aborted) return;
          answers.set(poll);
          if (answers.enough(options.routed)) resolve();
        })
        // fetchGroup rejects only once abandoned, when nobody waits for it any more.
        .catch(() => {})
        .finally(() => {
          if (--polling === 0) resolve();
        });
    }
  });
  abandon.abort();
}

/**
 * One leader's fetch for its partitions, answered by request position; a failure to reach the
 * leader becomes each partition's error. Rejects only with FetchAbandoned.
 */
async function fetchGroup(
  fetcher: LeaderFetcher,
  leaderId: number,
  entries: readonly RoutedPartition[],
  bounds: { maxWaitMs: number; minBytes: number; maxBytes: number },
  abandon?: AbortSignal,
): Promise<Map<number, FetchedPartition>> {
  const answers = new Map<number, FetchedPartition>();
  try {
    const response = await fetcher.fetch(
      leaderId,
      {
        ...bounds,
        partitions: entries.map(({ wanted }) => ({
          topic: wanted.topic,
          partition: wanted.partition,
          fetchOffset: wanted.fetchOffset,
          partitionMaxBytes:
            wanted.partitionMaxBytes > 0 ? wanted.partitionMaxBytes : partitionFetchBytesDefault,
        })),
      },
      abandon,
    );
    const byKey = new Map(response.partitions.map((answer) => [keyOf(answer), answer]));
    for (const { position, wanted } of entries) {
      const answer = byKey.get(keyOf(wanted));
      answers.set(
        position,
        answer === undefined
          ? emptyPartition(wanted, {
              code: 'UNKNOWN_SERVER_ERROR',
              message: `broker ${leaderId} did not answer for ${partitionName(wanted)}`,
              retriable: true,
            })
          : fetchedFromLeader(answer),
      );
    }
  } catch (error) {
    if (error instanceof FetchAbandoned) throw error;
    for (const { position, wanted } of entries) {
      answers.set(
        position,
        emptyPartition(
          wanted,
          wireErrorOf(error, `${partitionName(wanted)}: leader broker ${leaderId}: `),
        ),
      );
    }
  }
  return answers;
}

function keyOf(key: { topic: string; partition: number }): string {
  return `${key.partition}:${key.topic}`;
}

import { Counter, Histogram, type Registry } from 'prom-client';
import { CommonErrorCode, isCodedError } from './errors';

/**
 * Request metrics every service exports under the same names, as Kafka's RequestMetrics are per
 * request type: how many requests each API received, how many failed (whole calls, and each
 * partition or topic answered with an error) by Kafka error code, and how long requests took
 * (unary calls, requests on a ProduceStream, and the gateway's fetches for a Consume stream).
 * The gRPC server records every method through them; a service records its other request paths
 * (the storage node's data port) into the same series, so one query covers all of a service's
 * APIs. The `service` label comes from the registry's default labels.
 */

/** Latency buckets from 0.5 ms (a local append) to 30 s (the longest long poll or acks=all wait). */
export const requestDurationBucketsSeconds = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

export class RequestMetrics {
  readonly requests: Counter<'api'>;
  readonly errors: Counter<'api' | 'code'>;
  readonly durationSeconds: Histogram<'api'>;

  constructor(registry: Registry) {
    this.requests = new Counter({
      name: 'spool_requests_total',
      help: 'Requests received, by API (the RPC or data-port request name); a stream counts once.',
      labelNames: ['api'],
      registers: [registry],
    });
    this.errors = new Counter({
      name: 'spool_request_errors_total',
      help:
        'Requests failed, plus partitions or topics answered with an error, by API and Kafka ' +
        'error code.',
      labelNames: ['api', 'code'],
      registers: [registry],
    });
    this.durationSeconds = new Histogram({
      name: 'spool_request_duration_seconds',
      help:
        'Time from receiving a request to answering it, by API: each unary call, each request ' +
        'on a ProduceStream, and each fetch a Consume stream makes at a leader, from sending ' +
        'it to writing its records to the stream (the long-poll wait included, as ' +
        "Kafka's FetchConsumer request time includes fetch.max.wait.ms).",
      labelNames: ['api'],
      buckets: requestDurationBucketsSeconds,
      registers: [registry],
    });
  }

  /**
   * Counts a request and starts its clock. The returned function ends it: with the thrown error
   * (counted by code) or with the response (whose per-partition errors are counted).
   */
  begin(api: string, options: { timed: boolean }): (outcome: RequestOutcome) => void {
    this.requests.inc({ api });
    const stopTimer = options.timed ? this.durationSeconds.startTimer({ api }) : undefined;
    return (outcome) => {
      stopTimer?.();
      if ('error' in outcome) this.errors.inc({ api, code: errorCodeOf(outcome.error) });
      else this.countResponseErrors(api, outcome.response);
    };
  }

  /**
   * Counts every `error.code` found in the arrays at the top of a response (`results`,
   * `partitions`, `topics`): Spool answers each partition on its own, as Kafka does; and the
   * top-level `error` field in which group calls answer.
   */
  countResponseErrors(api: string, response: unknown): void {
    if (typeof response !== 'object' || response === null) return;
    const topLevel = (response as { error?: { code?: unknown } }).error?.code;
    if (typeof topLevel === 'string' && topLevel !== '') this.errors.inc({ api, code: topLevel });
    for (const value of Object.values(response)) {
      if (!Array.isArray(value)) continue;
      for (const entry of value as unknown[]) {
        const code = (entry as { error?: { code?: unknown } } | null)?.error?.code;
        if (typeof code === 'string' && code !== '') this.errors.inc({ api, code });
      }
    }
  }
}

export type RequestOutcome = { readonly response: unknown } | { readonly error: unknown };

/** The Kafka code of a failure; anything untyped is an UNKNOWN_SERVER_ERROR, as Kafka says. */
export function errorCodeOf(error: unknown): string {
  return isCodedError(error) ? error.code : CommonErrorCode.Unknown;
}

/** `/spool.v1.GatewayService/Produce` → `Produce`. */
export function apiNameOfPath(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

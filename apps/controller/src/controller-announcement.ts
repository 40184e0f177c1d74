/**
 * A controller that has just become active announces itself to every broker it inherited
 * (BeginControllerEpoch, as Kafka's controller sent UpdateMetadata after its election), one call
 * each, in parallel, each bounded by `announcementDeadlineMs`.
 *
 * Why: a broker learns of a failover only when its stream to the old controller breaks, and a
 * paused or cut-off controller breaks nothing until pings go unanswered (about 2.5 s). Until the
 * broker watches the new controller, the new one cannot tell it from a dead one, so it waited a
 * takeover grace long enough for every live broker to find it, and a broker that had died in the
 * failover kept its leaderships all that time. The announcement settles both sides at once:
 *
 * - answered with the registration the controller knows: the broker is alive and moves its
 *   stream here now (`reached`);
 * - the connection refused: nothing listens at the broker's address, the process is gone
 *   (`refused`), and it is fenced now, as a broker whose stream closed is
 *   (broker-lifecycle.ts, fenceDisconnected, says why that is safe);
 * - no answer in time (a paused or cut-off process, a pod whose address vanished) or any other
 *   answer: nothing is concluded (`unanswered`); the takeover grace decides as before.
 */
import type { ServiceError } from '@grpc/grpc-js';
import {
  callOnce,
  createGrpcClient,
  SpoolError,
  type Logger,
  type TransportSecurity,
} from '@spool/common';
import { StorageServiceClient } from '@spool/protocol';

/** How long one broker has to answer; a live broker on a busy machine answers in milliseconds. */
export const announcementDeadlineMs = 1_000;

export interface AnnouncedBroker {
  readonly brokerId: number;
  readonly brokerEpoch: bigint;
  /** The broker's gRPC endpoint, host:port. */
  readonly address: string;
}

export type AnnouncementOutcome = 'reached' | 'refused' | 'unanswered';

export interface AnnouncementResult {
  readonly brokerId: number;
  readonly brokerEpoch: bigint;
  readonly outcome: AnnouncementOutcome;
  readonly durationMs: number;
}

export class ControllerAnnouncer {
  constructor(
    private readonly transportSecurity: TransportSecurity | undefined,
    private readonly logger: Logger,
  ) {}

  /** Announces `controllerAddress` to each broker; never rejects. */
  announce(
    controllerAddress: string,
    controllerEpoch: bigint,
    brokers: readonly AnnouncedBroker[],
  ): Promise<AnnouncementResult[]> {
    return Promise.all(
      brokers.map((broker) => this.announceTo(controllerAddress, controllerEpoch, broker)),
    );
  }

  private async announceTo(
    controllerAddress: string,
    controllerEpoch: bigint,
    broker: AnnouncedBroker,
  ): Promise<AnnouncementResult> {
    const startedMs = Date.now();
    // A channel of its own: a shared one would carry the reconnect backoff of earlier failures.
    const client = createGrpcClient(
      StorageServiceClient,
      broker.address,
      {},
      this.transportSecurity?.channelCredentials(),
    );
    let outcome: AnnouncementOutcome = 'unanswered';
    try {
      const response = await callOnce(
        client,
        client.beginControllerEpoch,
        { controllerAddress, controllerEpoch, brokerId: broker.brokerId },
        { deadlineMs: announcementDeadlineMs },
      );
      if (
        response.followed &&
        response.brokerId === broker.brokerId &&
        response.brokerEpoch === broker.brokerEpoch
      ) {
        outcome = 'reached';
      }
    } catch (error) {
      if (isConnectionRefused(error)) outcome = 'refused';
      else this.logger.debug({ err: error, brokerId: broker.brokerId }, 'announcement failed');
    } finally {
      client.close();
    }
    return {
      brokerId: broker.brokerId,
      brokerEpoch: broker.brokerEpoch,
      outcome,
      durationMs: Date.now() - startedMs,
    };
  }
}

/** The connection was refused: no process listens at the address. */
function isConnectionRefused(error: unknown): boolean {
  const cause = (error instanceof SpoolError ? error.cause : error) as
    | Partial<ServiceError>
    | undefined;
  return typeof cause?.details === 'string' && cause.details.includes('ECONNREFUSED');
}

/**
 * The open Consume streams of this gateway: at most `streamsMax` at once (each holds fetches at
 * the leaders and one push in memory), refused beyond that with THROTTLING_QUOTA_EXCEEDED; all
 * ended with SHUTTING_DOWN, retriable, when the gateway stops, so their clients reconnect to
 * another gateway instead of waiting for a drain timeout.
 */
import type { ServerDuplexStream } from '@grpc/grpc-js';
import { CommonErrorCode, SpoolError } from '@spool/common';
import type { ConsumeRequest, ConsumeResponse } from '@spool/protocol';
import { ConsumeSession, type ConsumeDependencies } from './consume-session';

export class ConsumeStreams {
  private readonly sessions = new Set<ConsumeSession>();

  constructor(
    private readonly streamsMax: number,
    private readonly dependencies: ConsumeDependencies,
  ) {}

  get count(): number {
    return this.sessions.size;
  }

  async serve(call: ServerDuplexStream<ConsumeRequest, ConsumeResponse>): Promise<void> {
    if (this.sessions.size >= this.streamsMax) {
      throw new SpoolError(
        'THROTTLING_QUOTA_EXCEEDED',
        `this gateway already serves ${this.sessions.size} Consume streams (consumeStreamsMax); ` +
          'retry later or through another gateway',
      );
    }
    const session = new ConsumeSession(call, this.dependencies);
    this.sessions.add(session);
    try {
      await session.run();
    } finally {
      this.sessions.delete(session);
    }
  }

  stopAll(): void {
    for (const session of this.sessions) {
      session.stop(
        new SpoolError(CommonErrorCode.ShuttingDown, 'the gateway is shutting down', {
          retriable: true,
        }),
      );
    }
  }
}

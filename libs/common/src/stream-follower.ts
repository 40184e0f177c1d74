/**
 * Keeps a server stream open against the leader of a group of processes (the active controller's
 * WatchMetadata): it opens the stream through a LeaderChannel, hands every message on, and when
 * the stream fails or ends it follows the error's leader hint (or moves to the next address) and
 * opens it again after a capped, jittered backoff. The backoff restarts once a message arrives,
 * so a healthy stream that is cut reconnects at once. It never gives up until stopped.
 */
import type { ServiceError } from '@grpc/grpc-js';
import { SpoolError } from './errors';
import { backoffMs } from './grpc-client';
import { fromGrpcError } from './grpc-errors';
import type { LeaderChannel } from './leader-channel';
import type { Logger } from './logger';

/** The part of a grpc-js ClientReadableStream the follower uses. */
export interface FollowedStream<Message> {
  on(event: 'data', listener: (message: Message) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  cancel(): void;
}

export interface StreamFollowerOptions<Client extends { close(): void }, Message> {
  readonly channel: LeaderChannel<Client>;
  /** Opens the stream on the leader's client; called again for every reconnect. */
  readonly open: (client: Client) => FollowedStream<Message>;
  readonly onMessage: (message: Message) => void;
  readonly logger: Logger;
  /** Longest pause between reconnects; defaults to backoffMs's cap. */
  readonly backoffMaxMs?: number;
}

export class StreamFollower<Client extends { close(): void }, Message> {
  private stream: FollowedStream<Message> | undefined;
  private stopped = false;
  private running: Promise<void> | undefined;
  private wakeFromBackoff: () => void = () => {};
  /** The address the open stream (or the next one) is on. */
  private streamAddress: string | undefined;
  /** Set by moveToLeader: the stream's end is ours, so neither follow its error nor back off. */
  private moving = false;

  constructor(private readonly options: StreamFollowerOptions<Client, Message>) {}

  /** Starts following in the background; the returned promise settles once stopped. */
  start(): Promise<void> {
    this.running ??= this.follow();
    return this.running;
  }

  /** Settles once the loop has ended (after stop()); at once if it never started. */
  finished(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  /** Cancels the stream and ends the loop; the channel stays open (its owner closes it). */
  stop(): void {
    this.stopped = true;
    this.stream?.cancel();
    this.wakeFromBackoff();
  }

  /**
   * The channel's leader changed under an open stream (leaderAnnounced): reopens the stream on
   * the new leader now, instead of waiting for the old one's stream to fail (a paused leader's
   * fails only when its pings go unanswered). A no-op when the stream is already there.
   */
  moveToLeader(): void {
    if (this.stopped || this.streamAddress === this.options.channel.leaderAddress) return;
    this.moving = true;
    if (this.stream === undefined) {
      this.wakeFromBackoff();
    } else {
      this.stream.cancel();
    }
  }

  private async follow(): Promise<void> {
    for (let attempt = 1; !this.stopped; attempt++) {
      this.moving = false;
      const ended = await new Promise<unknown>((resolve) => {
        this.streamAddress = this.options.channel.leaderAddress;
        const stream = this.options.open(this.options.channel.client());
        this.stream = stream;
        stream.on('data', (message: Message) => {
          attempt = 0;
          this.options.onMessage(message);
        });
        stream.on('error', (error: Error) =>
          resolve(error instanceof SpoolError ? error : fromGrpcError(error as ServiceError)),
        );
        stream.on('end', () => resolve(undefined));
      });
      this.stream = undefined;
      if (this.stopped) return;
      if (this.moving) {
        // Cancelled by moveToLeader: the channel already names the new leader.
        this.options.logger.debug('stream moved to an announced leader');
        attempt = 0;
        continue;
      }
      this.options.channel.follow(ended);
      this.options.logger.debug({ err: ended }, 'stream ended; reconnecting');
      await this.pause(
        backoffMs(Math.max(1, attempt), { backoffMaxMs: this.options.backoffMaxMs }),
      );
    }
  }

  /** A backoff that stop() cuts short, so a stopped follower holds no timer. */
  private pause(durationMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, durationMs);
      this.wakeFromBackoff = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

import { assert, type Logger } from '@spool/common';
import { ClientErrorCode, clientError } from './errors';

/**
 * The life of a producer, consumer or admin: created, connected, closing, closed.
 * One guarded `transitionTo` logs every change; calls check `ensureOpen` instead of flags.
 * Connecting is optional (the first call connects lazily), as is the order of closes.
 */
export enum ClientState {
  Created = 'created',
  Connected = 'connected',
  Closing = 'closing',
  Closed = 'closed',
}

export class ClientLifecycle {
  private current = ClientState.Created;

  constructor(
    private readonly kind: string,
    private readonly logger: Logger,
  ) {}

  get state(): ClientState {
    return this.current;
  }

  get isOpen(): boolean {
    return this.current === ClientState.Created || this.current === ClientState.Connected;
  }

  transitionTo(allowedFrom: readonly ClientState[], next: ClientState): void {
    assert(
      allowedFrom.includes(this.current),
      `${this.kind}: no transition from ${this.current} to ${next}`,
    );
    this.logger.debug({ client: this.kind, from: this.current, to: next }, 'state change');
    this.current = next;
  }

  /** Throws CLIENT_CLOSED once close (or its alias disconnect) has begun. */
  ensureOpen(operation: string): void {
    if (this.isOpen) return;
    throw clientError(
      ClientErrorCode.ClientClosed,
      `cannot ${operation}: the ${this.kind} is ${this.current}`,
    );
  }
}

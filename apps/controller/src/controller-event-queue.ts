import { SpoolError } from '@spool/common';
/**
 * The active controller handles every command that writes metadata one at a time, in arrival
 * order, as Kafka's controller does with its event queue: each command reads the current view,
 * decides, commits, and waits until the view has applied its own write before the next one runs.
 * So no two commands race on the same partition, and compare-and-set failures mean only one
 * thing: another controller wrote (this one was deposed).
 */

/** Commands waiting beyond this are refused (retriable): a controller this far behind is sick. */
export const controllerQueueDepthMax = 1_000;

export class ControllerEventQueue {
  private tail: Promise<unknown> = Promise.resolve();
  private depth = 0;
  private closed = false;

  get pending(): number {
    return this.depth;
  }

  /** Runs `command` after every command enqueued before it; resolves with its result. */
  run<T>(command: () => Promise<T>): Promise<T> {
    if (this.closed) {
      return Promise.reject(
        new SpoolError('NOT_CONTROLLER', 'this controller is no longer active'),
      );
    }
    if (this.depth >= controllerQueueDepthMax) {
      return Promise.reject(
        new SpoolError(
          'UNAVAILABLE',
          `the controller has ${this.depth} commands waiting; retry later`,
        ),
      );
    }
    this.depth++;
    const result = this.tail.then(() => {
      if (this.closed)
        throw new SpoolError('NOT_CONTROLLER', 'this controller is no longer active');
      return command();
    });
    this.tail = result.then(
      () => this.depth--,
      () => this.depth--,
    );
    return result;
  }

  /** Resolves once every command enqueued so far has ended, whichever way. */
  drained(): Promise<void> {
    return this.tail.then(() => undefined);
  }

  /** Refuses new commands; those already queued fail with NOT_CONTROLLER as they come up. */
  close(): void {
    this.closed = true;
  }
}

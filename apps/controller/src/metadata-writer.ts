/**
 * Every write of the active controller goes through here: one store transaction whose first
 * condition is the controller's election guard, so a controller that lost its leadership (its
 * lease expired while it was paused or cut off) cannot change anything, however stale its view.
 * After a commit the writer waits until the cluster view has applied the revision, so the caller
 * reads its own write.
 */
import type { Compare, Leadership, MetadataKeys, MetadataStore, Operation } from '@spool/metadata';
import type { ClusterState } from './cluster-state';
import { ControllerError } from './controller-errors';

export class MetadataWriter {
  constructor(
    private readonly store: MetadataStore,
    private readonly keys: MetadataKeys,
    private readonly state: ClusterState,
    private readonly leadership: Leadership,
    /** Called when a write proves this controller was deposed. */
    private readonly onDeposed: () => void,
  ) {}

  /**
   * Commits `operations` if every compare holds. Throws NOT_CONTROLLER when the guard failed
   * (and reports the deposition), INVALID_UPDATE_VERSION when another compare failed.
   */
  async commit(compares: readonly Compare[], operations: readonly Operation[]): Promise<bigint> {
    let result;
    try {
      result = await this.store.transaction({
        compares: [this.leadership.guard, ...compares],
        success: operations,
      });
    } catch (error) {
      throw new ControllerError(
        'UNAVAILABLE',
        `the metadata store refused the write: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
    if (!result.succeeded) {
      const guard = await this.store
        .get((this.leadership.guard as { key: string }).key)
        .catch(() => undefined);
      if (guard === undefined || guard.createRevision !== this.leadership.fencingToken) {
        this.onDeposed();
        throw new ControllerError(
          'NOT_CONTROLLER',
          'this controller lost its leadership; retry with the new one',
        );
      }
      throw new ControllerError(
        'INVALID_UPDATE_VERSION',
        'the metadata changed during the update; retry',
      );
    }
    await this.state.waitForRevision(result.revision);
    return result.revision;
  }

  /** Compare on a key's last write, or its absence when it does not exist. */
  unchangedSince(key: string, modRevision: bigint | undefined): Compare {
    return modRevision === undefined
      ? { key, kind: 'absent' }
      : { key, kind: 'modRevision', equals: modRevision };
  }

  get metadataKeys(): MetadataKeys {
    return this.keys;
  }
}

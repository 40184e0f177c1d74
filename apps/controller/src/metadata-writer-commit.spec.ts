// Proves that a committed write's answer cannot hang its caller: MetadataWriter.commit waits for
// the controller's view to apply the write's revision only while the controller leads and only
// for revisionApplyWaitMsMax. When the controller stops leading first (its lease ended right
// after the write, as controller-0 did in seed 4016624198's run), the commit fails at once with
// the retriable NOT_CONTROLLER; when the view lags past the bound, with REQUEST_TIMED_OUT. The
// store here commits every transaction and the view applies only what the test applies.
import { SpoolError } from '@spool/common';
import { MetadataKeys, type Leadership, type MetadataStore } from '@spool/metadata';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ClusterState } from './cluster-state';
import { MetadataWriter, revisionApplyWaitMsMax } from './metadata-writer';

const keys = new MetadataKeys('test');
const committedRevision = 7n;

function setup() {
  const state = new ClusterState(keys, (key, error) => {
    throw new Error(`bad record at ${key}: ${String(error)}`);
  });
  state.load([], 1n);
  const store = {
    transaction: () => Promise.resolve({ succeeded: true, revision: committedRevision }),
  } as unknown as MetadataStore;
  const leadership = {
    fencingToken: 1n,
    guard: { key: keys.controller(), kind: 'absent' },
  } as unknown as Leadership;
  const writer = new MetadataWriter(store, keys, state, leadership, () => {});
  const commit = () =>
    writer.commit([], [{ kind: 'put', key: `${keys.root}/x`, value: Buffer.from('x') }]);
  return { state, commit };
}

const deposed = () => new SpoolError('NOT_CONTROLLER', 'stopped leading');

describe('MetadataWriter.commit after the write', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('answers the revision once the view applies it', async () => {
    const { state, commit } = setup();
    const committed = commit();
    await Promise.resolve();
    state.apply([], committedRevision);
    await expect(committed).resolves.toBe(committedRevision);
  });

  it('fails with NOT_CONTROLLER at once when the controller stops leading first', async () => {
    const { state, commit } = setup();
    const committed = commit();
    const outcome = committed.then(
      () => 'resolved',
      (error: SpoolError) => error,
    );
    await new Promise((resolve) => setImmediate(resolve));
    state.abandon(deposed());
    const error = await outcome;
    expect(error).toBeInstanceOf(SpoolError);
    expect((error as SpoolError).code).toBe('NOT_CONTROLLER');
    expect((error as SpoolError).retriable).toBe(true);
    // A later commit on the abandoned view fails the same way instead of waiting.
    await expect(commit()).rejects.toMatchObject({ code: 'NOT_CONTROLLER' });
  });

  it('fails with REQUEST_TIMED_OUT when the view lags past the bound', async () => {
    vi.useFakeTimers();
    const { state, commit } = setup();
    const outcome = commit().then(
      () => 'resolved',
      (error: SpoolError) => error,
    );
    await vi.advanceTimersByTimeAsync(revisionApplyWaitMsMax - 1);
    state.apply([], committedRevision - 1n);
    await vi.advanceTimersByTimeAsync(1);
    const error = await outcome;
    expect(error).toMatchObject({ code: 'REQUEST_TIMED_OUT', retriable: true });
    // The view catching up later neither throws nor answers twice.
    state.apply([], committedRevision);
  });
});

describe('ClusterState.waitForRevision', () => {
  it('resolves at once for an applied revision, even after the view was abandoned', async () => {
    const { state } = setup();
    state.abandon(deposed());
    await expect(state.waitForRevision(1n, 10)).resolves.toBeUndefined();
    await expect(state.waitForRevision(2n, 10)).rejects.toMatchObject({ code: 'NOT_CONTROLLER' });
  });
});

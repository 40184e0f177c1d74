// Proves the cluster link against fake controllers served over real gRPC on loopback: it follows
// a standby's NOT_CONTROLLER hint to the active controller, applies the snapshot and deltas into
// its cache and signals the first snapshot only once one is applied; when the active controller
// dies it reconnects to the next one, resuming from the last version it applied, and when it
// goes silent (frozen behind a relay, as a paused process) within seconds; waits end on a
// change or on their timeout; and stop() leaves no stream open.
import type { ServerWritableStream } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { GrpcServer, SpoolError, createLogger } from '@spool/common';
import { startFreezingRelay } from '@spool/common/testing';
import {
  ControllerServiceService,
  WatchMetadataResponse,
  type BrokerMetadata,
  type WatchMetadataRequest,
} from '@spool/protocol';
import { ClusterLink } from './cluster-link';

const logger = createLogger({ service: 'test', level: 'silent' });

function broker(brokerId: number): BrokerMetadata {
  return {
    brokerId,
    rack: '',
    endpoints: [{ name: 'grpc', host: '127.0.0.1', port: 9000 + brokerId }],
    brokerEpoch: 1n,
    state: 'ALIVE',
    decommissioned: false,
  };
}

function metadataMessage(
  metadataVersion: bigint,
  snapshot: boolean,
  brokers: BrokerMetadata[],
): WatchMetadataResponse {
  return WatchMetadataResponse.fromPartial({ metadataVersion, snapshot, brokers });
}

/**
 * A controller that serves only WatchMetadata. As a standby it answers NOT_CONTROLLER naming
 * `activeController`; as the active one it sends its snapshot unless the watcher is already at
 * its version (as the real controller does), then every published delta.
 */
class FakeController {
  readonly server = new GrpcServer(logger, { maxMessageBytes: 1 << 20, descriptorSetPaths: [] });
  /** The fromVersion of every WatchMetadata this controller served as the active one. */
  readonly watchedFrom: bigint[] = [];
  /** Set while this controller is a standby: the address it names as the active one. */
  activeController: string | undefined;
  standbyRefusals = 0;
  /** While set, a new watcher gets its snapshot only once this settles. */
  holdSnapshot: Promise<void> | undefined;
  snapshot = metadataMessage(0n, true, []);
  address = '';
  private readonly watchers = new Set<ServerWritableStream<unknown, WatchMetadataResponse>>();

  async start(): Promise<void> {
    const refused = (name: string) => () =>
      Promise.reject(new SpoolError('UNSUPPORTED_VERSION', `${name} is not faked`));
    this.server.addService(ControllerServiceService, {
      ...Object.fromEntries(
        Object.keys(ControllerServiceService).map((name) => [name, refused(name)]),
      ),
      watchMetadata: async (
        request: WatchMetadataRequest,
        call: ServerWritableStream<unknown, WatchMetadataResponse>,
      ) => {
        if (this.activeController !== undefined) {
          this.standbyRefusals++;
          throw new SpoolError('NOT_CONTROLLER', 'this controller is a standby', {
            retriable: true,
            details: { activeController: this.activeController },
          });
        }
        this.watchedFrom.push(request.fromVersion);
        this.watchers.add(call);
        await this.holdSnapshot;
        if (request.fromVersion !== this.snapshot.metadataVersion || request.fromVersion === 0n)
          call.write(this.snapshot);
        await new Promise<void>((resolve) => call.once('cancelled', () => resolve()));
        this.watchers.delete(call);
      },
    });
    const port = await this.server.listen('127.0.0.1', 0);
    this.address = `127.0.0.1:${port}`;
  }

  get watcherCount(): number {
    return this.watchers.size;
  }

  /** Publishes a delta adding a broker; the snapshot a new watcher gets includes it. */
  publishBroker(version: bigint, added: BrokerMetadata): void {
    this.snapshot = metadataMessage(version, true, [...this.snapshot.brokers, added]);
    for (const watcher of this.watchers) watcher.write(metadataMessage(version, false, [added]));
  }

  async stop(): Promise<void> {
    await this.server.shutdown(0);
  }
}

/** Whether a promise has settled once the callbacks pending now have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

function brokerIds(link: ClusterLink): number[] {
  return [...link.metadata.brokers.keys()].sort((a, b) => a - b);
}


describe('ClusterLink', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function startController(): Promise<FakeController> {
    const controller = new FakeController();
    await controller.start();
    cleanups.push(() => controller.stop());
    return controller;
  }

  function startLink(controllerAddresses: string[]): ClusterLink {
    const link = new ClusterLink({ controllerAddresses, logger });
    cleanups.push(() => link.stop());
    link.start();
    return link;
  }

  it('leaves a controller that goes silent (paused, cut off) within seconds for the next one', async () => {
    const silent = await startController();
    const next = await startController();
    silent.snapshot = metadataMessage(3n, true, [broker(1)]);
    next.snapshot = metadataMessage(7n, true, [broker(1), broker(2)]);
    const relay = await startFreezingRelay(silent.address);
    cleanups.push(() => relay.close());
    const link = startLink([relay.address, next.address]);
    await link.firstSnapshotApplied;
    expect(brokerIds(link)).toEqual([1]);

    relay.freeze();
    const frozenAt = Date.now();
    // The silent controller's stream neither ends nor errs by itself: only the unanswered
    // keepalive pings break it, and the link then watches the next controller.
    await expect.poll(() => brokerIds(link), { timeout: 8_000, interval: 50 }).toEqual([1, 2]);
    expect(Date.now() - frozenAt).toBeLessThan(5_000);
    expect(next.watchedFrom).toEqual([3n]);
  });

  it('follows a standby to the active controller and signals the first snapshot once applied', async () => {
    const active = await startController();
    const standby = await startController();
    standby.activeController = active.address;
    active.snapshot = metadataMessage(5n, true, [broker(1)]);
    let releaseSnapshot: () => void = () => {};
    active.holdSnapshot = new Promise((resolve) => (releaseSnapshot = resolve));

    // Only the standby is configured: the active controller is reached through its hint alone.
    const link = startLink([standby.address]);
    await expect
      .poll(() => active.watcherCount === 1, {
        timeout: 10_000,
        message: 'the link reaches the active controller',
      })
      .toBe(true);
    expect(standby.standbyRefusals).toBe(1);
    expect(active.watchedFrom).toEqual([0n]);
    expect(link.channel.leaderAddress).toBe(active.address);

    // 1. Connected is not loaded: the signal waits for the snapshot.
    expect(await settled(link.firstSnapshotApplied)).toBe(false);
    releaseSnapshot();
    await link.firstSnapshotApplied;
    expect(link.metadata.version).toBe(5n);
    expect(brokerIds(link)).toEqual([1]);

    // 2. Deltas after it are applied on top.
    active.publishBroker(6n, broker(2));
    await expect
      .poll(() => link.metadata.version === 6n, {
        timeout: 10_000,
        message: 'the delta is applied',
      })
      .toBe(true);
    expect(brokerIds(link)).toEqual([1, 2]);
  });

  it('reconnects to the next controller when the active one dies, resuming from its version', async () => {
    const first = await startController();
    const second = await startController();
    second.activeController = first.address;
    first.snapshot = metadataMessage(5n, true, [broker(1)]);
    const link = startLink([first.address, second.address]);
    await link.firstSnapshotApplied;
    first.publishBroker(6n, broker(2));
    await expect
      .poll(() => link.metadata.version === 6n, {
        timeout: 10_000,
        message: 'the delta is applied',
      })
      .toBe(true);

    // The second controller takes over with the same state, then the first one dies.
    second.snapshot = metadataMessage(6n, true, [broker(1), broker(2)]);
    second.activeController = undefined;
    await first.stop();
    await expect
      .poll(() => second.watcherCount === 1, {
        timeout: 10_000,
        message: 'the link reaches the second controller',
      })
      .toBe(true);
    expect(second.watchedFrom).toEqual([6n]);
    expect(link.channel.leaderAddress).toBe(second.address);

    // Nothing was missed, so no snapshot came; the next delta lands on what the link had.
    second.publishBroker(7n, broker(3));
    await expect
      .poll(() => link.metadata.version === 7n, {
        timeout: 10_000,
        message: 'the new controller’s delta is applied',
      })
      .toBe(true);
    expect(brokerIds(link)).toEqual([1, 2, 3]);
  });

  it('replaces its metadata with the new controller’s snapshot when it missed changes', async () => {
    const first = await startController();
    const second = await startController();
    first.snapshot = metadataMessage(5n, true, [broker(1), broker(2)]);
    const link = startLink([first.address, second.address]);
    await link.firstSnapshotApplied;
    expect(brokerIds(link)).toEqual([1, 2]);

    // Broker 1 went away and broker 3 came while the link was cut off from both.
    second.snapshot = metadataMessage(9n, true, [broker(2), broker(3)]);
    await first.stop();
    await expect
      .poll(() => link.metadata.version === 9n, {
        timeout: 10_000,
        message: 'the new snapshot is applied',
      })
      .toBe(true);
    expect(second.watchedFrom).toEqual([5n]);
    expect(brokerIds(link)).toEqual([2, 3]);
  });

  it('ends a wait on the change it waits for, or on its timeout', async () => {
    const controller = await startController();
    controller.snapshot = metadataMessage(5n, true, [broker(1)]);
    const link = startLink([controller.address]);
    await link.firstSnapshotApplied;

    expect(await link.waitUntil(() => link.metadata.brokers.has(1), 0)).toBe(true);
    expect(await link.waitForNewerVersion(5n, 0)).toBe(false);
    const startedMs = Date.now();
    expect(await link.waitForNewerVersion(5n, 100)).toBe(false);
    expect(Date.now() - startedMs).toBeGreaterThanOrEqual(90);

    const newer = link.waitForNewerVersion(5n, 10_000);
    controller.publishBroker(6n, broker(2));
    expect(await newer).toBe(true);
    expect(link.metadata.version).toBe(6n);
  });

  it('stops with no stream left open and does not reconnect', async () => {
    const controller = await startController();
    const link = startLink([controller.address]);
    await link.firstSnapshotApplied;
    expect(controller.watcherCount).toBe(1);

    link.stop();
    await expect
      .poll(() => controller.watcherCount === 0, {
        timeout: 10_000,
        message: 'the stream is cancelled',
      })
      .toBe(true);
    // The follow loop has ended: no reconnect can come after this.
    await link.stopped();
    expect(controller.watchedFrom).toHaveLength(1);
  });
});

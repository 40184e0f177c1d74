// Proves the scale-in guard's writer (scale-in-guard-writer.ts, rules 1-5) over a real
// ClusterState fed store events and an in-memory ConfigMap with Kubernetes' resourceVersion
// semantics: it writes the view's answer when it starts following and after a broker or partition
// change, never writes equal data again, leaves alone a ConfigMap a newer controller wrote for the
// same cluster (but not one of another cluster), starts again from a read after a conflict, gives
// up after attemptsMax failures and once at a 404, and stops writing when it stops following.
import { createLogger } from '@spool/common';
import type { KeyValue, WatchEvent } from '@spool/metadata';
import { MetadataKeys } from '@spool/metadata';
import { describe, expect, it } from 'vitest';
import { ClusterState } from './cluster-state';
import { encodeRecord, type BrokerRecord, type PartitionRecord } from './metadata-records';
import { ScaleInGuardWriter, type GuardConfigMap } from './scale-in-guard-writer';

const keys = new MetadataKeys('test');
const logger = createLogger({ service: 'test', level: 'silent' });
/** No timer ever fires in these tests: each check is called by hand. */
const manual = {
  checkIntervalMs: 3_600_000,
  refreshIntervalMs: 3_600_000,
  attemptsMax: 3,
  backoffInitialMs: 1,
  backoffMaxMs: 1,
};

class FakeConfigMap implements GuardConfigMap {
  readonly name = 'spool-e2e/spool-storage-scale-in';
  data: Record<string, string> = {};
  resourceVersion = 1;
  patches = 0;
  reads = 0;
  /** Each read or patch takes the next of these errors while any is left. */
  failures: unknown[] = [];
  /** Called between a read and the patch that follows it: a concurrent writer. */
  beforePatch: (() => void) | undefined;
  statefulSetUid = 'sts-1';

  async readStatefulSetUid() {
    return this.statefulSetUid;
  }

  async read() {
    this.reads++;
    const failure = this.failures.shift();
    if (failure !== undefined) throw failure;
    return { data: { ...this.data }, resourceVersion: String(this.resourceVersion) };
  }

  async patchData(data: Readonly<Record<string, string>>, resourceVersion: string) {
    this.beforePatch?.();
    this.beforePatch = undefined;
    if (resourceVersion !== String(this.resourceVersion)) {
      throw Object.assign(new Error('Operation cannot be fulfilled: conflict'), { code: 409 });
    }
    this.patches++;
    this.data = { ...this.data, ...data };
    this.resourceVersion++;
  }
}

function broker(brokerId: number, decommissioned = false): BrokerRecord {
  return {
    brokerId,
    rack: '',
    endpoints: [],
    incarnationId: `i${brokerId}`,
    brokerEpoch: '1',
    fenced: false,
    ...(decommissioned ? { decommissioned: true } : {}),
  };
}

const partition = (replicas: number[]): PartitionRecord => ({
  replicas,
  isr: replicas,
  leader: replicas[0]!,
  leaderEpoch: 0,
  partitionEpoch: 0,
});

function cluster(clusterId = 'c1') {
  const state = new ClusterState(keys, (key, error) => {
    throw new Error(`bad record at ${key}: ${String(error)}`);
  });
  let revision = 10n;
  const keyValue = (key: string, value: Buffer): KeyValue => ({
    key,
    value,
    createRevision: revision,
    modRevision: revision,
    version: 1n,
    lease: 0n,
  });
  state.load(
    [
      keyValue(keys.cluster(), encodeRecord({ clusterId })),
      ...[0, 1, 2, 3].map((id) => keyValue(keys.broker(id), encodeRecord(broker(id)))),
      keyValue(
        keys.topic('t'),
        encodeRecord({ name: 't', topicId: 'id', partitionCount: 1, configs: {}, internal: false }),
      ),
      keyValue(keys.partition('t', 0), encodeRecord(partition([3, 1, 2]))),
    ],
    revision,
  );
  const put = (key: string, value: Buffer): void => {
    revision += 1n;
    const event: WatchEvent = { kind: 'put', keyValue: keyValue(key, value) };
    state.apply([event], revision);
  };
  return { state, put, revision: () => revision };
}

describe('ScaleInGuardWriter', () => {
  it("writes the view's answer on following, and again after a change", async () => {
    const { state, put, revision } = cluster();
    const configMap = new FakeConfigMap();
    const writer = new ScaleInGuardWriter(configMap, logger, manual);
    writer.follow(state);
    await writer.check();
    expect(configMap.data).toEqual({
      removableFromOrdinal: '4',
      brokersNotRemovable: '0,1,2,3',
      statefulSetUid: 'sts-1',
      clusterId: 'c1',
      metadataRevision: '10',
    });

    // Nothing changed: no write. Broker 3 decommissioned but still a replica: same answer.
    await writer.check();
    put(keys.broker(3), encodeRecord(broker(3, true)));
    await writer.check();
    expect(configMap.patches).toBe(1);

    // Its replica moved to 0: brokers 3 and up may go.
    put(keys.partition('t', 0), encodeRecord(partition([0, 1, 2])));
    await writer.check();
    expect(configMap.data).toMatchObject({
      removableFromOrdinal: '3',
      brokersNotRemovable: '0,1,2',
      metadataRevision: String(revision()),
    });
    expect(configMap.patches).toBe(2);

    // The StatefulSet was made anew (a reinstall): the same answer is written for its uid.
    configMap.statefulSetUid = 'sts-2';
    put(keys.broker(2), encodeRecord(broker(2)));
    await writer.check();
    expect(configMap.data).toMatchObject({ removableFromOrdinal: '3', statefulSetUid: 'sts-2' });
    await writer.stop();
  });

  it('leaves a newer controller’s answer for the same cluster alone, not another cluster’s', async () => {
    const { state } = cluster();
    const configMap = new FakeConfigMap();
    configMap.data = {
      removableFromOrdinal: '3',
      brokersNotRemovable: '0,1,2',
      statefulSetUid: 'sts-1',
      clusterId: 'c1',
      metadataRevision: '11',
    };
    const writer = new ScaleInGuardWriter(configMap, logger, manual);
    writer.follow(state);
    await writer.check();
    expect(configMap.patches).toBe(0);
    expect(configMap.data['removableFromOrdinal']).toBe('3');
    await writer.stop();

    // The same revision numbers from a cluster whose etcd started anew: written.
    configMap.data['clusterId'] = 'c0';
    const next = new ScaleInGuardWriter(configMap, logger, manual);
    next.follow(state);
    await next.check();
    expect(configMap.data).toMatchObject({ removableFromOrdinal: '4', clusterId: 'c1' });
    await next.stop();
  });

  it('reads again after a conflict and writes over the concurrent change', async () => {
    const { state } = cluster();
    const configMap = new FakeConfigMap();
    configMap.beforePatch = () => {
      configMap.data = { removableFromOrdinal: '0', brokersNotRemovable: '' };
      configMap.resourceVersion++;
    };
    const writer = new ScaleInGuardWriter(configMap, logger, manual);
    writer.follow(state);
    await writer.check();
    expect(configMap.reads).toBe(2);
    expect(configMap.data).toMatchObject({ removableFromOrdinal: '4' });
    await writer.stop();
  });

  it('gives up after attemptsMax failures, at once on a 404, and tries again on a change', async () => {
    const { state, put } = cluster();
    const configMap = new FakeConfigMap();
    configMap.failures = [
      new Error('ECONNRESET'),
      new Error('ECONNRESET'),
      new Error('ECONNRESET'),
    ];
    const writer = new ScaleInGuardWriter(configMap, logger, manual);
    writer.follow(state);
    await writer.check();
    expect({ reads: configMap.reads, patches: configMap.patches }).toEqual({
      reads: 3,
      patches: 0,
    });

    configMap.failures = [Object.assign(new Error('not found'), { code: 404 })];
    put(keys.broker(3), encodeRecord(broker(3, true)));
    await writer.check();
    expect({ reads: configMap.reads, patches: configMap.patches }).toEqual({
      reads: 4,
      patches: 0,
    });

    put(keys.partition('t', 0), encodeRecord(partition([0, 1, 2])));
    await writer.check();
    expect(configMap.data['removableFromOrdinal']).toBe('3');
    await writer.stop();
  });

  it('writes nothing once it stops following (leadership lost)', async () => {
    const { state, put } = cluster();
    const configMap = new FakeConfigMap();
    const writer = new ScaleInGuardWriter(configMap, logger, manual);
    writer.follow(state);
    await writer.check();
    writer.follow(undefined);
    put(keys.broker(3), encodeRecord(broker(3, true)));
    put(keys.partition('t', 0), encodeRecord(partition([0, 1, 2])));
    await writer.check();
    expect(configMap.patches).toBe(1);
    expect(configMap.data['removableFromOrdinal']).toBe('4');
  });
});

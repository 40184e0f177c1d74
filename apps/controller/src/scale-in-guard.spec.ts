// Proves the scale-in guard's ordinal (scale-in-guard.ts): the StatefulSet may go down to one past
// the highest broker that holds a replica or is not decommissioned; a decommissioned broker still
// holding replicas (its moves unfinished, or a reassignment's removing replica) blocks, an empty
// but undecommissioned one blocks, an id only partitions name blocks, and a cluster of removable
// brokers may scale to 0.
import { describe, expect, it } from 'vitest';
import { scaleInGuardData, scaleInGuardState, type ScaleInBroker } from './scale-in-guard';

const brokers = (count: number, decommissioned: readonly number[] = []): ScaleInBroker[] =>
  Array.from({ length: count }, (_, brokerId) => ({
    brokerId,
    decommissioned: decommissioned.includes(brokerId),
  }));

describe('scaleInGuardState', () => {
  it('allows removing a decommissioned broker once no partition names it', () => {
    expect(
      scaleInGuardState(brokers(4, [3]), [
        [0, 1, 2],
        [1, 2, 0],
      ]),
    ).toEqual({
      removableFromOrdinal: 3,
      brokersNotRemovable: [0, 1, 2],
    });
  });

  it('keeps a decommissioned broker that still holds a replica', () => {
    expect(
      scaleInGuardState(brokers(4, [3]), [
        [0, 1, 2],
        [3, 1, 2],
      ]),
    ).toEqual({
      removableFromOrdinal: 4,
      brokersNotRemovable: [0, 1, 2, 3],
    });
  });

  it('counts a reassignment in flight: its replica set holds the removing replicas', () => {
    // Moving 3 → 0: replicas are the target [0, 1, 2] followed by the removing 3.
    expect(scaleInGuardState(brokers(4, [3]), [[0, 1, 2, 3]]).removableFromOrdinal).toBe(4);
  });

  it('keeps an empty broker that is not decommissioned: a replica may be placed on it', () => {
    expect(scaleInGuardState(brokers(4), [[0, 1, 2]]).removableFromOrdinal).toBe(4);
  });

  it('names the highest blocking broker even below removable ones', () => {
    // 4 and 5 are empty and decommissioned, 3 is not: only 4 and up may go.
    expect(scaleInGuardState(brokers(6, [4, 5]), [[0, 1, 2]])).toEqual({
      removableFromOrdinal: 4,
      brokersNotRemovable: [0, 1, 2, 3],
    });
    // 3 is decommissioned but 4 is not: nothing above 4 may go, 3 included.
    expect(scaleInGuardState(brokers(5, [3]), [[0, 1, 2]])).toEqual({
      removableFromOrdinal: 5,
      brokersNotRemovable: [0, 1, 2, 4],
    });
  });

  it('counts a broker id that partitions name but that is not registered', () => {
    expect(scaleInGuardState(brokers(3), [[0, 1, 7]])).toEqual({
      removableFromOrdinal: 8,
      brokersNotRemovable: [0, 1, 2, 7],
    });
  });

  it('allows 0 when every broker is decommissioned and empty, and with no broker at all', () => {
    expect(scaleInGuardState(brokers(3, [0, 1, 2]), [])).toEqual({
      removableFromOrdinal: 0,
      brokersNotRemovable: [],
    });
    expect(scaleInGuardState([], []).removableFromOrdinal).toBe(0);
  });
});

describe('scaleInGuardData', () => {
  it('writes the strings the chart policy parses', () => {
    expect(
      scaleInGuardData(
        { removableFromOrdinal: 4, brokersNotRemovable: [0, 1, 2, 3] },
        { statefulSetUid: 'u1', clusterId: 'c1', metadataRevision: 42n },
      ),
    ).toEqual({
      removableFromOrdinal: '4',
      brokersNotRemovable: '0,1,2,3',
      statefulSetUid: 'u1',
      clusterId: 'c1',
      metadataRevision: '42',
    });
  });
});

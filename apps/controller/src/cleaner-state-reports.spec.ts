// Proves the controller's memory of log cleaner reports: each heartbeat's report replaces the
// broker's previous one whole (a partition absent from it is forgotten), an empty report forgets
// the broker, every state carries the broker that reported it, and a partition's states come
// from each of its replicas, the leader's first.
import { describe, expect, it } from 'vitest';
import { CleanerStateReports } from './cleaner-state-reports';

function state(topic: string, partition: number, firstDirtyOffset: bigint) {
  return {
    topic,
    partition,
    firstDirtyOffset,
    dirtyRatio: 0.25,
    uncleanableReason: '',
    brokerId: 0,
  };
}

describe('CleanerStateReports', () => {
  it("keeps each broker's last report whole, stamped with the broker", () => {
    const reports = new CleanerStateReports();
    reports.record(1, [state('orders', 0, 10n), state('orders', 1, 20n)]);
    reports.record(2, [state('orders', 0, 7n)]);
    expect(reports.of(1, 'orders', 0)).toMatchObject({ firstDirtyOffset: 10n, brokerId: 1 });
    expect(reports.of(2, 'orders', 0)).toMatchObject({ firstDirtyOffset: 7n, brokerId: 2 });

    reports.record(1, [state('orders', 0, 15n)]);
    expect(reports.of(1, 'orders', 0)?.firstDirtyOffset).toBe(15n);
    expect(reports.of(1, 'orders', 1)).toBeUndefined();

    reports.record(2, []);
    expect(reports.of(2, 'orders', 0)).toBeUndefined();
    expect(reports.of(3, 'orders', 0)).toBeUndefined();
  });

  it("gives a partition's state on each replica that reported it, the leader's first", () => {
    const reports = new CleanerStateReports();
    reports.record(0, [state('orders', 0, 4n)]);
    reports.record(1, [state('orders', 0, 10n), state('orders', 1, 20n)]);
    reports.record(2, [state('orders', 0, 7n)]);
    const partition = { partition: 0, leaderId: 2, replicas: [0, 1, 2], offline: false };
    expect(reports.ofReplicas('orders', partition).map((entry) => entry.brokerId)).toEqual([
      2, 0, 1,
    ]);
    // A replica without a report (broker 3) and a broker that is not a replica are left out.
    expect(
      reports
        .ofReplicas('orders', { partition: 1, leaderId: 3, replicas: [3, 1], offline: false })
        .map((entry) => [entry.brokerId, entry.firstDirtyOffset]),
    ).toEqual([[1, 20n]]);
    // An offline partition has no leader: its replicas in their order.
    expect(
      reports
        .ofReplicas('orders', { ...partition, leaderId: -1, offline: true })
        .map((entry) => entry.brokerId),
    ).toEqual([0, 1, 2]);
  });
});

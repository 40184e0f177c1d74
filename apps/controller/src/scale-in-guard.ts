/**
 * Which storage nodes Kubernetes may remove (the chart's scale-in guard, storageNode.scaleInGuard).
 * A StatefulSet scaled to N replicas removes the pods with ordinals N and up, and a storage node's
 * broker id is its pod's ordinal, so scaling to N is safe when every broker with id N or more is
 * removable: decommissioned (no new replica goes to it) and holding no replica. The chart's
 * ValidatingAdmissionPolicy refuses a lower replica count than `removableFromOrdinal`, and names
 * the brokers of `brokersNotRemovable` the change would remove.
 *
 * A broker id can hold replicas without being registered (its node is gone but partitions still
 * name it), and a registered broker can be empty but not decommissioned (it may receive a replica
 * at any moment): neither is removable.
 */

export interface ScaleInBroker {
  readonly brokerId: number;
  readonly decommissioned: boolean;
}

export interface ScaleInGuardState {
  /** The lowest replica count the StatefulSet may have: every broker at or above it is removable. */
  readonly removableFromOrdinal: number;
  /** Every broker id that holds a replica or is registered and not decommissioned, ascending. */
  readonly brokersNotRemovable: readonly number[];
}

/**
 * The guard's state from the registered brokers and every partition's replica set (during a
 * reassignment that set holds the adding and the removing replicas, so both count).
 */
export function scaleInGuardState(
  brokers: Iterable<ScaleInBroker>,
  replicaSets: Iterable<readonly number[]>,
): ScaleInGuardState {
  const notRemovable = new Set<number>();
  for (const broker of brokers) {
    if (!broker.decommissioned) notRemovable.add(broker.brokerId);
  }
  for (const replicas of replicaSets) {
    for (const brokerId of replicas) notRemovable.add(brokerId);
  }
  const brokersNotRemovable = [...notRemovable].sort((left, right) => left - right);
  const highest = brokersNotRemovable[brokersNotRemovable.length - 1];
  return {
    removableFromOrdinal: highest === undefined ? 0 : highest + 1,
    brokersNotRemovable,
  };
}

/**
 * The ConfigMap data the chart's policy reads (every value a string, as a ConfigMap's are): the
 * answer, the StatefulSet it is about (its uid, which the policy compares with the object it
 * admits, so an answer about an earlier StatefulSet of the same name never counts), and the view
 * it came from (the cluster id and the metadata revision).
 */
export function scaleInGuardData(
  state: ScaleInGuardState,
  view: {
    readonly statefulSetUid: string;
    readonly clusterId: string;
    readonly metadataRevision: bigint;
  },
): Record<string, string> {
  return {
    removableFromOrdinal: String(state.removableFromOrdinal),
    brokersNotRemovable: state.brokersNotRemovable.join(','),
    statefulSetUid: view.statefulSetUid,
    clusterId: view.clusterId,
    metadataRevision: String(view.metadataRevision),
  };
}

/**
 * A storage node's broker id: set explicitly, or taken from the StatefulSet ordinal at the end
 * of the pod's host name (`spool-storage-2` → 2), so each pod keeps its id, and with it its
 * partitions, across restarts and rescheduling.
 */
export function brokerIdFromHostname(hostname: string): number | undefined {
  const match = /-(\d+)$/.exec(hostname.split('.')[0] ?? '');
  if (match === null) return undefined;
  const ordinal = Number(match[1]);
  return Number.isSafeInteger(ordinal) && ordinal <= 2_147_483_647 ? ordinal : undefined;
}

/** The configured id wins; -1 means "derive it", which fails loudly when it cannot be derived. */
export function resolveBrokerId(configuredBrokerId: number, hostname: string): number {
  if (configuredBrokerId >= 0) return configuredBrokerId;
  const derived = brokerIdFromHostname(hostname);
  if (derived === undefined) {
    throw new Error(
      `broker.id is not set and the pod name "${hostname}" (setting pod.name, else the host ` +
        'name) does not end in a StatefulSet ordinal (-N)',
    );
  }
  return derived;
}

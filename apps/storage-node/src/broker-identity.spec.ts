// Proves the broker id follows Kubernetes' StatefulSet naming and that an explicit id wins.
import { describe, expect, it } from 'vitest';
import { brokerIdFromHostname, resolveBrokerId } from './broker-identity';

describe('broker identity', () => {
  it('reads the StatefulSet ordinal from the host name', () => {
    expect(brokerIdFromHostname('spool-storage-2')).toBe(2);
    expect(brokerIdFromHostname('spool-storage-12.spool-storage.default.svc.cluster.local')).toBe(
      12,
    );
    expect(brokerIdFromHostname('laptop')).toBeUndefined();
    expect(brokerIdFromHostname('spool-storage-99999999999')).toBeUndefined();
  });

  it('prefers an explicit id and fails loudly when none can be derived', () => {
    expect(resolveBrokerId(7, 'spool-storage-2')).toBe(7);
    expect(resolveBrokerId(-1, 'spool-storage-2')).toBe(2);
    expect(() => resolveBrokerId(-1, 'laptop')).toThrow(
      /broker\.id is not set and the pod name "laptop"/,
    );
  });
});

// Proves the metadata key layout: keys sort numerically, partition keys parse back, and ids and
// cluster names that would break the layout are refused.
import { describe, expect, it } from 'vitest';
import { MetadataKeys } from './metadata-keys';

describe('MetadataKeys', () => {
  const keys = new MetadataKeys('local');

  it('lays keys out under one cluster prefix, sorted numerically', () => {
    expect(keys.broker(2)).toBe('/spool/local/brokers/0000000002');
    expect(keys.partition('orders', 11)).toBe('/spool/local/topics/orders/partitions/0000000011');
    const sorted = [keys.broker(10), keys.broker(9), keys.broker(100)].sort();
    expect(sorted).toEqual([keys.broker(9), keys.broker(10), keys.broker(100)]);
    expect(keys.controller().startsWith(keys.root)).toBe(true);
  });

  it('parses partition keys back and ignores other keys', () => {
    expect(keys.parsePartition(keys.partition('a.b-c_d', 7))).toEqual({
      topic: 'a.b-c_d',
      partition: 7,
    });
    expect(keys.parsePartition(keys.topic('orders'))).toBeUndefined();
    expect(keys.parsePartition(keys.broker(1))).toBeUndefined();
  });

  it('parses broker and topic keys back', () => {
    expect(keys.parseBroker(keys.broker(12))).toBe(12);
    expect(keys.parseBroker(keys.topic('x'))).toBeUndefined();
    expect(keys.parseTopic(keys.topic('orders'))).toBe('orders');
    expect(keys.parseTopic(keys.partition('orders', 1))).toBeUndefined();
    expect(keys.partition('orders', 1).startsWith(keys.partitions('orders'))).toBe(true);
    expect(keys.partition('orders2', 1).startsWith(keys.partitions('orders'))).toBe(false);
  });

  it('parses coordinator and coordinator shard keys back', () => {
    expect(keys.parseCoordinator(keys.coordinator('coordinator-0:9094'))).toBe(
      'coordinator-0:9094',
    );
    expect(keys.parseCoordinator(keys.coordinatorShard(3))).toBeUndefined();
    expect(keys.parseCoordinatorShard(keys.coordinatorShard(49))).toBe(49);
    expect(keys.parseCoordinatorShard(keys.coordinator('a'))).toBeUndefined();
    expect(keys.parseTopic(keys.coordinatorShard(1))).toBeUndefined();
  });

  it('refuses ids and names that would break the layout', () => {
    expect(() => keys.broker(-1)).toThrow(RangeError);
    expect(() => keys.partition('t', 1.5)).toThrow(RangeError);
    expect(() => new MetadataKeys('a/b')).toThrow(/cluster name/);
  });
});

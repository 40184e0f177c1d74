// Proves the default partitioner: keyed records go where Kafka's murmur2 sends them, and keyless
// records stick to one partition until that partition's batch is closed, then move to another
// partition with a leader (never the same one when there is a choice), as KIP-480 describes.
import { describe, expect, it } from 'vitest';
import { partitionForKey } from './murmur2';
import { DefaultPartitioner } from './partitioner';
import type { TopicPartitions } from './topic-metadata';

const sixPartitions: TopicPartitions = {
  topic: 'orders',
  partitionCount: 6,
  availablePartitions: [0, 1, 2, 3, 4, 5],
};

describe('DefaultPartitioner', () => {
  it('sends keyed records to murmur2(key) % partitions, as Kafka does', () => {
    const partitioner = new DefaultPartitioner();
    for (const key of ['foobar', 'a-little-bit-long-string', 'abc', '21']) {
      const bytes = Buffer.from(key);
      expect(partitioner.partition(bytes, sixPartitions)).toBe(partitionForKey(bytes, 6));
    }
    // Kafka's UtilsTest vector: murmur2("foobar") = -790332482.
    expect(partitioner.partition(Buffer.from('foobar'), sixPartitions)).toBe(
      (-790332482 & 0x7fffffff) % 6,
    );
  });

  it('keeps keyless records on one partition until its batch is closed, then moves', () => {
    const partitioner = new DefaultPartitioner();
    const first = partitioner.partition(null, sixPartitions);
    for (let index = 0; index < 50; index++) {
      expect(partitioner.partition(null, sixPartitions)).toBe(first);
    }
    // A batch of another partition closing changes nothing.
    partitioner.onBatchClosed('orders', (first + 1) % 6);
    expect(partitioner.partition(null, sixPartitions)).toBe(first);
    partitioner.onBatchClosed('orders', first);
    const second = partitioner.partition(null, sixPartitions);
    expect(second).not.toBe(first);
    expect(partitioner.partition(null, sixPartitions)).toBe(second);
  });

  it('spreads keyless batches over every partition over time', () => {
    const partitioner = new DefaultPartitioner();
    const seen = new Set<number>();
    for (let batch = 0; batch < 200; batch++) {
      const partition = partitioner.partition(null, sixPartitions);
      seen.add(partition);
      partitioner.onBatchClosed('orders', partition);
    }
    expect([...seen].sort()).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('prefers partitions with a leader and stays when only one has one', () => {
    const partitioner = new DefaultPartitioner();
    const oneLeader = { ...sixPartitions, availablePartitions: [4] };
    for (let batch = 0; batch < 10; batch++) {
      expect(partitioner.partition(null, oneLeader)).toBe(4);
      partitioner.onBatchClosed('orders', 4);
    }
    const twoLeaders = { ...sixPartitions, availablePartitions: [1, 3] };
    const other = new DefaultPartitioner();
    for (let batch = 0; batch < 20; batch++) {
      const partition = other.partition(null, twoLeaders);
      expect([1, 3]).toContain(partition);
      other.onBatchClosed('orders', partition);
      expect(other.partition(null, twoLeaders)).not.toBe(partition);
    }
  });

  it('keeps sticky partitions per topic', () => {
    const partitioner = new DefaultPartitioner(() => 0.99);
    const payments = { ...sixPartitions, topic: 'payments' };
    const orders = partitioner.partition(null, sixPartitions);
    partitioner.partition(null, payments);
    partitioner.onBatchClosed('payments', partitioner.partition(null, payments));
    expect(partitioner.partition(null, sixPartitions)).toBe(orders);
  });
});

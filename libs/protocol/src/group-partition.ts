/**
 * Which `__consumer_offsets` partition holds a group, as Kafka computes it:
 * `Utils.abs(groupId.hashCode()) % partitionCount`, with Java's String.hashCode over UTF-16 code
 * units and Kafka's abs, which maps Integer.MIN_VALUE to 0. Using Kafka's function keeps a
 * group on the partition a Kafka operator would predict.
 */
export const consumerOffsetsTopic = '__consumer_offsets';
export const consumerOffsetsPartitionCountDefault = 50;

export function javaStringHashCode(text: string): number {
  let hash = 0;
  for (let index = 0; index < text.length; index++) {
    hash = (Math.imul(hash, 31) + text.charCodeAt(index)) | 0;
  }
  return hash;
}

export function groupPartition(
  groupId: string,
  partitionCount = consumerOffsetsPartitionCountDefault,
): number {
  const hash = javaStringHashCode(groupId);
  const positive = hash === -2147483648 ? 0 : Math.abs(hash);
  return positive % partitionCount;
}

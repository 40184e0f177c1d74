/**
 * Kafka's murmur2 hash, bit for bit as `org.apache.kafka.common.utils.Utils.murmur2`, so that a
 * keyed record lands on the same partition number in Spool as it would in Kafka. Java's int
 * arithmetic is reproduced with Math.imul and `| 0`; `>>>` is Java's unsigned shift.
 */
const seed = 0x9747b28c;
const multiplier = 0x5bd1e995;
const shift = 24;

export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let hash = (seed ^ length) | 0;
  const wholeWords = length >>> 2;
  for (let word = 0; word < wholeWords; word++) {
    const index = word * 4;
    let k =
      data[index]! | (data[index + 1]! << 8) | (data[index + 2]! << 16) | (data[index + 3]! << 24);
    k = Math.imul(k, multiplier);
    k ^= k >>> shift;
    k = Math.imul(k, multiplier);
    hash = Math.imul(hash, multiplier);
    hash ^= k;
  }
  // The remaining one to three bytes, as the fall-through switch in Kafka's Java.
  const tail = length & ~3;
  const remaining = length & 3;
  if (remaining >= 3) hash ^= data[tail + 2]! << 16;
  if (remaining >= 2) hash ^= data[tail + 1]! << 8;
  if (remaining >= 1) {
    hash ^= data[tail]!;
    hash = Math.imul(hash, multiplier);
  }
  hash ^= hash >>> 13;
  hash = Math.imul(hash, multiplier);
  hash ^= hash >>> 15;
  return hash | 0;
}

/** Kafka's `Utils.toPositive`: clears the sign bit (not Math.abs, which overflows on MIN_VALUE). */
export function toPositive(value: number): number {
  return value & 0x7fffffff;
}

/** The partition Kafka's default partitioner picks for a non-null key. */
export function partitionForKey(key: Uint8Array, partitionCount: number): number {
  if (!Number.isInteger(partitionCount) || partitionCount < 1) {
    throw new RangeError(`partition count must be a positive integer, got ${partitionCount}`);
  }
  return toPositive(murmur2(key)) % partitionCount;
}

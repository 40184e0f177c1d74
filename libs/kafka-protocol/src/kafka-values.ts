/**
 * Equality of Kafka message values as Kafka's generated `equals` defines it: numbers, bigints,
 * booleans and strings by value, Buffers (bytes, records, UUIDs) by content, arrays element by
 * element, structs field by field. Writers use it to decide whether a tagged field holds its
 * default (and is left out) and whether a field the version lacks may be dropped.
 */
export function kafkaValuesEqual(left: unknown, right: unknown): boolean {
  if (left === right) return true;
  if (left === null || right === null || typeof left !== 'object' || typeof right !== 'object') {
    return false;
  }
  if (Buffer.isBuffer(left) || Buffer.isBuffer(right)) {
    return Buffer.isBuffer(left) && Buffer.isBuffer(right) && left.equals(right);
  }
  if (Array.isArray(left) || Array.isArray(right)) {
    if (!Array.isArray(left) || !Array.isArray(right) || left.length !== right.length) return false;
    for (let index = 0; index < left.length; index++) {
      if (!kafkaValuesEqual(left[index], right[index])) return false;
    }
    return true;
  }
  const leftRecord = left as Record<string, unknown>;
  const rightRecord = right as Record<string, unknown>;
  const keys = Object.keys(leftRecord);
  if (keys.length !== Object.keys(rightRecord).length) return false;
  for (const key of keys) {
    if (!kafkaValuesEqual(leftRecord[key], rightRecord[key])) return false;
  }
  return true;
}

/** Whether a UUID is Kafka's zero UUID. */
export function isZeroUuid(value: Buffer): boolean {
  for (let index = 0; index < value.length; index++) {
    if (value[index] !== 0) return false;
  }
  return true;
}

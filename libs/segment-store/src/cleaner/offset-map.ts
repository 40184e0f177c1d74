/**
 * The log cleaner's map from key to the offset of its latest record in the dirty section of a
 * log (Kafka's SkimpyOffsetMap): fixed memory, decided when the cleaner starts
 * (log.cleaner.dedupe.buffer.size), however many keys the log holds. A key is stored as its
 * MD5 digest (16 bytes) beside its offset (8 bytes), in one buffer with open addressing and
 * linear probing; past its load factor the map takes no more keys, and the cleaner cleans the
 * dirty section only up to the last offset the map covers (the rest waits for the next pass).
 *
 * Two different keys with the same digest would make the cleaner drop the older key's latest
 * record; with 128-bit digests that takes about 2^64 keys, as in Kafka.
 */
// node:assert rather than @spool/common's: the map lives in the cleaner's thread, whose script
// would otherwise load gRPC, pino and prom-client for one function (most of its start time).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';

const digestBytes = 16;
const slotBytes = digestBytes + 8;

export class OffsetMap {
  /** Slots the buffer holds. */
  readonly slotCount: number;
  /** Keys the map takes before it reports itself full (slotCount × load factor). */
  readonly keyCountMax: number;
  private readonly slots: Buffer;
  /** 1 where a slot holds a key; a digest of zeros is a legal digest. */
  private readonly used: Uint8Array;
  private keyCount = 0;
  private latestOffsetValue = -1n;

  constructor(
    /** The memory it was given (log.cleaner.dedupe.buffer.size). */
    readonly memoryBytes: number,
    loadFactor = 0.9,
  ) {
    assert(loadFactor > 0 && loadFactor <= 1, 'the load factor is in (0, 1]');
    this.slotCount = Math.floor(memoryBytes / (slotBytes + 1));
    assert(this.slotCount >= 1, `an offset map needs at least ${slotBytes + 1} bytes`);
    this.keyCountMax = Math.max(1, Math.floor(this.slotCount * loadFactor));
    this.slots = Buffer.alloc(this.slotCount * slotBytes);
    this.used = new Uint8Array(this.slotCount);
  }

  get size(): number {
    return this.keyCount;
  }

  get full(): boolean {
    return this.keyCount >= this.keyCountMax;
  }

  /** The largest offset put since the last clear; -1 when none. */
  get latestOffset(): bigint {
    return this.latestOffsetValue;
  }

  /**
   * Records `offset` as `key`'s latest. Returns false, changing nothing, when the key is new and
   * the map is full.
   */
  put(key: Buffer, offset: bigint): boolean {
    const digest = digestOf(key);
    const slot = this.find(digest);
    if (slot < 0) return false;
    if (this.used[slot] === 0) {
      if (this.full) return false;
      digest.copy(this.slots, slot * slotBytes);
      this.used[slot] = 1;
      this.keyCount += 1;
    }
    this.slots.writeBigInt64BE(offset, slot * slotBytes + digestBytes);
    if (offset > this.latestOffsetValue) this.latestOffsetValue = offset;
    return true;
  }

  /** `key`'s latest offset; undefined when the map has not seen the key. */
  get(key: Buffer): bigint | undefined {
    const slot = this.find(digestOf(key));
    return slot < 0 || this.used[slot] === 0
      ? undefined
      : this.slots.readBigInt64BE(slot * slotBytes + digestBytes);
  }

  clear(): void {
    this.used.fill(0);
    this.keyCount = 0;
    this.latestOffsetValue = -1n;
  }

  /** The slot holding `digest`, or the empty slot where it would go; -1 when neither exists. */
  private find(digest: Buffer): number {
    let slot = digest.readUInt32BE(0) % this.slotCount;
    for (let probes = 0; probes < this.slotCount; probes++) {
      if (this.used[slot] === 0) return slot;
      if (this.holdsDigest(slot, digest)) return slot;
      slot = slot + 1 === this.slotCount ? 0 : slot + 1;
    }
    // Only a map filled to every slot (load factor 1) has no empty slot to stop at.
    return -1;
  }

  /**
   * Whether `slot` holds `digest`: four 32-bit reads, not Buffer.compare, whose call into C++
   * cost a third of the map's time (the slot's first word usually differs).
   */
  private holdsDigest(slot: number, digest: Buffer): boolean {
    const at = slot * slotBytes;
    const slots = this.slots;
    return (
      slots.readUInt32BE(at) === digest.readUInt32BE(0) &&
      slots.readUInt32BE(at + 4) === digest.readUInt32BE(4) &&
      slots.readUInt32BE(at + 8) === digest.readUInt32BE(8) &&
      slots.readUInt32BE(at + 12) === digest.readUInt32BE(12)
    );
  }
}

function digestOf(key: Buffer): Buffer {
  return createHash('md5').update(key).digest();
}

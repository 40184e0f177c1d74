/**
 * A small seeded pseudo-random generator (mulberry32) for every test that draws at random (the
 * fault schedule, the bad-input fuzzers, the answer-dropping proxy), so a run replays exactly
 * from the seed it prints.
 */
export class SeededRandom {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let value = this.state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** An integer in [min, max]. */
  integer(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** An integer in [0, bound). */
  below(bound: number): number {
    return Math.floor(this.next() * bound);
  }

  bytes(count: number): Buffer {
    const buffer = Buffer.alloc(count);
    for (let index = 0; index < count; index++) buffer[index] = this.below(256);
    return buffer;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[Math.floor(this.next() * items.length)]!;
  }
}

/** A run's seed: the environment variable `name` replays one; otherwise a fresh one. */
export function seedFromEnvironment(name: string): number {
  const given = process.env[name];
  if (given !== undefined && given !== '') {
    const seed = Number(given);
    if (!Number.isSafeInteger(seed) || seed < 0 || seed > 0xffffffff) {
      throw new RangeError(`${name} must be an integer from 0 to 4294967295, got ${given}`);
    }
    return seed;
  }
  return Math.floor(Math.random() * 0xffffffff);
}

/** The fault suite's seed: SPOOL_FAULTS_SEED replays one. */
export function faultSeed(): number {
  return seedFromEnvironment('SPOOL_FAULTS_SEED');
}

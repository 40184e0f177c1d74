import { encodeRecordBatch } from '@spool/record-batch';
import { SeededRandom, seedFromEnvironment } from '../support/seeded-random';

/** The bad-input suite's generator: `SPOOL_FUZZ_SEED=<n>` replays a run exactly. */
export function fuzzRandom(): SeededRandom {
  return new SeededRandom(seedFromEnvironment('SPOOL_FUZZ_SEED'));
}

/** A well-formed batch of `count` small records, as a producer would send it. */
export function validBatch(label: string, count: number): Buffer {
  return encodeRecordBatch({
    baseOffset: 0n,
    records: Array.from({ length: count }, (_, index) => ({
      key: Buffer.from(`${label}-key-${index}`),
      value: Buffer.from(`${label}-value-${index}`),
      headers: [],
      timestampMs: 1_700_000_000_000n + BigInt(index),
    })),
  });
}

// RecordBatch v2 header offsets (Kafka's DefaultRecordBatch).
const batchLengthOffset = 8;
const magicOffset = 16;
const crcOffset = 17;
const recordCountOffset = 57;
const recordsOffset = 61;

/** A malformed batch and the words its error must contain to name what was wrong. */
export interface BatchMutation {
  readonly name: string;
  readonly bytes: Buffer;
  /** The error message must match this (it names the field or the check that failed). */
  readonly mentions: RegExp;
  /**
   * True when the mutation leaves a batch the leader may legitimately accept: bytes the leader
   * overwrites anyway (base offset, partition leader epoch) are not covered by the CRC.
   */
  readonly mayBeAccepted?: boolean;
}

/** One random malformed variant of `batch`, of a randomly chosen kind. */
export function mutateBatch(random: SeededRandom, batch: Buffer): BatchMutation {
  const copy = Buffer.from(batch);
  switch (random.below(9)) {
    case 0: {
      copy.writeUInt32BE(
        (copy.readUInt32BE(crcOffset) ^ (1 + random.below(0xffff))) >>> 0,
        crcOffset,
      );
      return { name: 'wrong CRC', bytes: copy, mentions: /crc/i };
    }
    case 1: {
      const delta = random.pick([-1, 1, 7, -20, 1_000_000, -2_000_000_000]);
      copy.writeInt32BE(copy.readInt32BE(batchLengthOffset) + delta, batchLengthOffset);
      return {
        name: `batchLength off by ${delta}`,
        bytes: copy,
        mentions: /length|size|bytes|truncat/i,
      };
    }
    case 2: {
      copy[magicOffset] = random.pick([0, 1, 3, 255]);
      return { name: `magic ${copy[magicOffset]}`, bytes: copy, mentions: /magic/i };
    }
    case 3: {
      const lie = random.pick([1, 2, -1, 1000, 0x7fffffff]);
      const claimed = copy.readInt32BE(recordCountOffset) + lie;
      copy.writeInt32BE(claimed | 0, recordCountOffset);
      return { name: `recordCount lies by ${lie}`, bytes: copy, mentions: /record|count|crc/i };
    }
    case 4: {
      const cut = 1 + random.below(copy.length - 1);
      return {
        name: `truncated to ${cut} bytes`,
        bytes: copy.subarray(0, cut),
        mentions: /length|size|bytes|truncat|short|header/i,
      };
    }
    case 5: {
      // A varint whose continuation bit never ends inside the record area.
      copy.fill(0xff, recordsOffset, copy.length);
      return { name: 'unterminated varints', bytes: copy, mentions: /varint|record|crc/i };
    }
    case 6: {
      const position = random.below(copy.length);
      copy[position]! ^= 1 << random.below(8);
      const uncovered = position < batchLengthOffset || (position >= 12 && position < magicOffset);
      return {
        name: `bit flip at byte ${position}`,
        bytes: copy,
        mentions: /crc|length|magic|record|size|bytes|attribute|offset|epoch|timestamp|count/i,
        mayBeAccepted: uncovered,
      };
    }
    case 7: {
      return { name: 'random bytes', bytes: random.bytes(1 + random.below(200)), mentions: /./ };
    }
    default: {
      return {
        name: 'empty records',
        bytes: Buffer.alloc(0),
        mentions: /record|empty|batch|bytes/i,
      };
    }
  }
}

export const invalidTopicNames: readonly string[] = [
  '',
  '.',
  '..',
  'has space',
  'slash/inside',
  'ümlaut',
  'nul\u0000byte',
  'x'.repeat(250),
  'y'.repeat(100_000),
];

export const badPartitions: readonly number[] = [-1, -2_147_483_648, 2_147_483_647, 1_000_000];

export const badOffsets: readonly bigint[] = [-3n, -(2n ** 63n), 2n ** 63n - 1n, 10n ** 15n];

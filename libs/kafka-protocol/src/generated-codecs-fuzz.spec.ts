// Fuzzes every generated reader: for every schema and version, random bytes, every truncation of a
// valid encoding (of a random message), and valid encodings with random bytes overwritten are
// read; each read either returns a message or throws a KafkaProtocolError, never another error
// (no RangeError from a Buffer read, even one the readers would wrap, no allocation sized by an
// unchecked length). Seeded, bounded by a count per version; SPOOL_KAFKA_FUZZ_SEED replays a run.
import { describe, expect, it } from 'vitest';
import { KafkaProtocolError } from './errors';
import * as generated from './generated/index';
import { KafkaReader } from './kafka-reader';
import { KafkaWriter } from './kafka-writer';
import { loadMessageSpecs, randomMessage, versionsOf } from './testing/index';

const randomInputsPerVersion = 24;
const mutationsPerVersion = 24;
const truncationsPerVersion = 32;

type Read = (reader: KafkaReader, version: number) => unknown;
type Write = (writer: KafkaWriter, message: unknown, version: number) => void;

/** mulberry32: a small seeded generator, so a failure replays from the printed seed. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const seed = Number(process.env['SPOOL_KAFKA_FUZZ_SEED'] ?? Math.floor(Math.random() * 0xffffffff));
const specs = loadMessageSpecs().filter((message) => versionsOf(message).length > 0);
const exports = generated as unknown as Record<string, unknown>;

/** Reads `bytes`, true if that threw; anything thrown must be a KafkaProtocolError of its own. */
function readOrProtocolError(read: Read, bytes: Buffer, version: number, context: string): boolean {
  try {
    read(new KafkaReader(bytes), version);
    return false;
  } catch (error) {
    // The generated readers wrap any other error (asKafkaProtocolError, as a last defence); one
    // with a cause is such a wrapped RangeError or TypeError: a bounds check the reader missed.
    if (!(error instanceof KafkaProtocolError) || error.cause !== undefined) {
      const input = bytes.toString('hex');
      throw new Error(`${context} (seed ${seed}, input ${input}): ${String(error)}`, {
        cause: error,
      });
    }
    return true;
  }
}

describe(`generated readers under random input (seed ${seed})`, () => {
  it.each(specs.map((message) => [message.name, message] as const))(
    '%s throws only KafkaProtocolError, every version',
    (name, message) => {
      const read = exports[`read${name}`] as Read;
      const write = exports[`write${name}`] as Write;
      const random = seededRandom(seed ^ name.length ^ (name.charCodeAt(0) << 8));
      const integer = (max: number): number => Math.floor(random() * (max + 1));
      for (const version of versionsOf(message)) {
        for (let index = 0; index < randomInputsPerVersion; index++) {
          const bytes = Buffer.alloc(integer(64));
          for (let at = 0; at < bytes.length; at++) bytes[at] = integer(255);
          readOrProtocolError(read, bytes, version, `${name} v${version} random`);
        }
        const writer = new KafkaWriter();
        write(writer, randomMessage(message, version, random), version);
        const valid = writer.toBuffer();
        for (let index = 0; index < truncationsPerVersion && index < valid.length; index++) {
          const end = valid.length <= truncationsPerVersion ? index : integer(valid.length - 1);
          const cut = valid.subarray(0, end);
          const thrown = readOrProtocolError(read, cut, version, `${name} v${version} cut`);
          expect(thrown, `${name} v${version} cut at ${end} must not parse`).toBe(true);
        }
        for (let index = 0; index < mutationsPerVersion && valid.length > 0; index++) {
          const mutated = Buffer.from(valid);
          for (let count = 1 + integer(3); count > 0; count--) {
            // Length prefixes and markers are what a mutation should hit: 0xff and 0x7f often.
            mutated[integer(mutated.length - 1)] = [0xff, 0x7f, 0x80, 0x00, integer(255)][
              integer(4)
            ]!;
          }
          readOrProtocolError(read, mutated, version, `${name} v${version} mutated`);
        }
      }
    },
  );
});

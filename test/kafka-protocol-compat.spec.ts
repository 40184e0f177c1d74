// Proves libs/kafka-protocol's generated codecs byte for byte against Kafka's own serializers: for
// random messages of every schema (requests, responses, headers, data) and every version each
// ships, the bytes the TypeScript writer produces equal those that kafka-clients' generated *Data
// classes write for the same message (given to them in Kafka's JSON form), the TypeScript reader
// decodes Kafka's bytes back to the same message, and Kafka reads the TypeScript bytes without
// error. Kafka's side is test/support/kafka-message-codec (one JVM on the pinned jar). The seed is
// printed; SPOOL_KAFKA_COMPAT_SEED replays a run.
import * as kafka from '@spool/kafka-protocol';
import { KafkaReader, KafkaWriter } from '@spool/kafka-protocol';
import {
  kafkaJsonOf,
  loadMessageSpecs,
  randomMessage,
  versionsOf,
  type MessageSpec,
} from '@spool/kafka-protocol/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaMessageCodec } from './support/kafka-message-codec';
import { SeededRandom, seedFromEnvironment } from './support/seeded-random';

/** Random messages per schema version: 3 × ~1,600 schema versions keeps the run near 20 s. */
const messagesPerVersion = 3;

type Read = (reader: KafkaReader, version: number) => unknown;
type Write = (writer: KafkaWriter, message: unknown, version: number) => void;

function codecOf(message: MessageSpec): { read: Read; write: Write } {
  const exports = kafka as unknown as Record<string, unknown>;
  const read = exports[`read${message.name}`];
  const write = exports[`write${message.name}`];
  if (typeof read !== 'function' || typeof write !== 'function') {
    throw new Error(`@spool/kafka-protocol exports no reader or writer for ${message.name}`);
  }
  return { read: read as Read, write: write as Write };
}

const seed = seedFromEnvironment('SPOOL_KAFKA_COMPAT_SEED');
const specs = loadMessageSpecs().filter((message) => versionsOf(message).length > 0);
let javaCodec: KafkaMessageCodec;

beforeAll(() => {
  console.log(`kafka-protocol-compat: seed ${seed} (SPOOL_KAFKA_COMPAT_SEED=${seed} replays it)`);
  javaCodec = KafkaMessageCodec.start();
}, 600_000);

afterAll(async () => {
  await javaCodec?.stop();
});

describe('generated codecs against kafka-clients 4.4.0', () => {
  it('has a schema of every kind to test', () => {
    const kinds = new Set(specs.map((message) => message.type));
    expect([...kinds].sort()).toEqual(['data', 'header', 'request', 'response']);
    expect(specs.length).toBeGreaterThan(190);
  });

  it.each(specs.map((message) => [message.name, message] as const))(
    '%s: TypeScript bytes equal Kafka bytes and read back as the message, every version',
    async (_, message) => {
      const random = new SeededRandom((seed ^ hashOf(message.name)) >>> 0);
      const { read, write } = codecOf(message);
      const cases = versionsOf(message).flatMap((version) =>
        Array.from({ length: messagesPerVersion }, () => ({
          version,
          value: randomMessage(message, version, () => random.next()),
        })),
      );
      // Every command first, then every answer: the JVM works through them as a pipeline.
      const answers = cases.map(({ version, value }) =>
        javaCodec.encode(message.name, version, kafkaJsonOf(message, value, version)),
      );
      const encoded = cases.map(({ version, value }) => {
        const writer = new KafkaWriter();
        write(writer, value, version);
        return writer.toBuffer();
      });
      const decodedByKafka = cases.map(({ version }, index) =>
        javaCodec.decode(message.name, version, encoded[index]!),
      );
      for (const [index, { version, value }] of cases.entries()) {
        const context = `${message.name} v${version} (seed ${seed}): ${kafkaJsonOf(message, value, version)}`;
        const answer = await answers[index]!;
        if (!answer.ok) throw new Error(`Kafka could not encode ${context}: ${answer.error}`);
        expect(encoded[index]!.toString('hex'), context).toBe(answer.payload);
        const kafkaBytes = Buffer.from(answer.payload, 'hex');
        const reader = new KafkaReader(kafkaBytes);
        expect(read(reader, version), context).toEqual(value);
        expect(reader.remainingBytes, context).toBe(0);
        const decoded = await decodedByKafka[index]!;
        expect(decoded.ok ? '' : decoded.error, context).toBe('');
      }
    },
  );
});

/** A stable 32-bit hash of a name, so each schema draws its own sequence from the run's seed. */
function hashOf(text: string): number {
  let hash = 2166136261;
  for (let index = 0; index < text.length; index++) {
    hash = Math.imul(hash ^ text.charCodeAt(index), 16777619);
  }
  return hash >>> 0;
}

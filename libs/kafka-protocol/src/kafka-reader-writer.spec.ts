// Proves the primitive codec: Kafka's known encodings of unsigned varints and of classic and
// compact strings, bytes and arrays; round trips of every primitive; that a truncated or malformed
// input (a cut varint, a 2 GiB length prefix, a null where none is allowed) throws a
// KafkaProtocolError naming the field and the offset, never a RangeError; and the writer's
// chunks: large records appended by reference, a reserved size prefix, the size bound.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KafkaProtocolError } from './errors';
import { KafkaReader } from './kafka-reader';
import { byReferenceSizeBytesMin, KafkaWriter } from './kafka-writer';

function bytesOf(write: (writer: KafkaWriter) => void): Buffer {
  const writer = new KafkaWriter();
  write(writer);
  return writer.toBuffer();
}

function readError(read: () => unknown): KafkaProtocolError {
  try {
    read();
  } catch (error) {
    expect(error).toBeInstanceOf(KafkaProtocolError);
    return error as KafkaProtocolError;
  }
  throw new Error('expected a KafkaProtocolError');
}

describe('unsigned varints', () => {
  it.each([
    [0, '00'],
    [1, '01'],
    [127, '7f'],
    [128, '8001'],
    [300, 'ac02'],
    [2 ** 31 - 1, 'ffffffff07'],
    [2 ** 32 - 1, 'ffffffff0f'],
  ])('%d is written as %s, as ByteUtils.writeUnsignedVarint does', (value, hex) => {
    expect(bytesOf((writer) => writer.writeUnsignedVarint(value)).toString('hex')).toBe(hex);
    expect(new KafkaReader(Buffer.from(hex, 'hex')).readUnsignedVarint('value')).toBe(value);
  });

  it('round-trips every 32-bit value, signed ones zig-zag encoded', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer(), (unsigned, signed) => {
        const buffer = bytesOf((writer) => {
          writer.writeUnsignedVarint(unsigned);
          writer.writeVarint(signed);
        });
        const reader = new KafkaReader(buffer);
        expect(reader.readUnsignedVarint('unsigned')).toBe(unsigned);
        expect(reader.readVarint('signed')).toBe(signed);
        expect(reader.remainingBytes).toBe(0);
      }),
    );
  });

  it('refuses a varint cut short or longer than 5 bytes', () => {
    const cut = readError(() =>
      new KafkaReader(Buffer.from('8080', 'hex')).readUnsignedVarint('x.count'),
    );
    expect(cut.code).toBe('INVALID_REQUEST');
    expect(cut.message).toContain('x.count');
    expect(cut.offset).toBe(2);
    const long = readError(() =>
      new KafkaReader(Buffer.from('8080808080', 'hex')).readUnsignedVarint('x.count'),
    );
    expect(long.message).toMatch(/longer than/);
  });
});

describe('strings, bytes and arrays', () => {
  it('writes a classic string with an int16 length and a compact one with length + 1', () => {
    expect(bytesOf((writer) => writer.writeString('héllo', false)).toString('hex')).toBe(
      '000668c3a96c6c6f',
    );
    expect(bytesOf((writer) => writer.writeString('héllo', true)).toString('hex')).toBe(
      '0768c3a96c6c6f',
    );
    expect(bytesOf((writer) => writer.writeNullableString(null, false)).toString('hex')).toBe(
      'ffff',
    );
    expect(bytesOf((writer) => writer.writeNullableString(null, true)).toString('hex')).toBe('00');
    expect(bytesOf((writer) => writer.writeNullableBytes(null, false)).toString('hex')).toBe(
      'ffffffff',
    );
    expect(bytesOf((writer) => writer.writeArrayLength(2, true)).toString('hex')).toBe('03');
  });

  it('round-trips strings, bytes and primitives in both encodings', () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.option(fc.string({ maxLength: 40 })),
        fc.uint8Array({ maxLength: 3000 }),
        fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
        fc.double({ noNaN: true }),
        (flexible, text, bytes, int64, float64) => {
          const buffer = bytesOf((writer) => {
            writer.writeNullableString(text, flexible);
            writer.writeBytes(Buffer.from(bytes), flexible);
            writer.writeInt64(int64);
            writer.writeFloat64(float64);
            writer.writeUint16(65535);
            writer.writeInt8(-128);
            writer.writeBool(true);
          });
          const reader = new KafkaReader(buffer);
          expect(reader.readNullableString('text', flexible)).toBe(text);
          expect(reader.readBytes('bytes', flexible).equals(Buffer.from(bytes))).toBe(true);
          expect(reader.readInt64('int64')).toBe(int64);
          expect(Object.is(reader.readFloat64('float64'), float64)).toBe(true);
          expect(reader.readUint16('uint16')).toBe(65535);
          expect(reader.readInt8('int8')).toBe(-128);
          expect(reader.readBool('bool')).toBe(true);
          expect(reader.remainingBytes).toBe(0);
        },
      ),
    );
  });

  it('refuses a 2 GiB length prefix in a short input without allocating for it', () => {
    const prefix = Buffer.from('7fffffff00', 'hex');
    const error = readError(() => new KafkaReader(prefix).readBytes('Produce.records', false));
    expect(error.message).toMatch(/length 2147483647 is longer than the 1 bytes that remain/);
    expect(error.field).toBe('Produce.records');
    const array = readError(() =>
      new KafkaReader(Buffer.from('ffffffff0f', 'hex')).readArrayLength(
        'Fetch.topics',
        true,
        false,
      ),
    );
    expect(array.code).toBe('INVALID_REQUEST');
  });

  it('refuses null where the field is not nullable, and a string over 32767 bytes', () => {
    expect(
      readError(() => new KafkaReader(Buffer.from('ffff', 'hex')).readString('s', false)).message,
    ).toMatch(/null string/);
    expect(
      readError(() => new KafkaReader(Buffer.from('00', 'hex')).readArrayLength('a', true, false))
        .message,
    ).toMatch(/null array/);
    const writer = new KafkaWriter();
    expect(() => writer.writeString('x'.repeat(0x8000), true, 'Header.clientId')).toThrow(
      KafkaProtocolError,
    );
  });

  it('returns bytes and records as views of the input, not copies', () => {
    const input = Buffer.from('0000000301020304', 'hex');
    const records = new KafkaReader(input).readRecords('records', false)!;
    expect(records.buffer).toBe(input.buffer);
    expect(records.byteOffset).toBe(input.byteOffset + 4);
    expect([...records]).toEqual([1, 2, 3]);
  });
});

describe('KafkaWriter chunks', () => {
  it('appends large records by reference and patches a reserved size prefix', () => {
    const records = Buffer.alloc(byReferenceSizeBytesMin * 4, 7);
    const writer = new KafkaWriter();
    const size = writer.reserveInt32();
    writer.writeInt32(42);
    writer.writeRecords(records, false);
    writer.writeInt16(9);
    writer.setInt32(size, writer.sizeBytes - 4);
    const chunks = writer.toBuffers();
    expect(chunks).toContain(records);
    const joined = writer.toBuffer();
    expect(joined.length).toBe(4 + 4 + 4 + records.length + 2);
    expect(joined.readInt32BE(0)).toBe(joined.length - 4);
    expect(joined.readInt16BE(joined.length - 2)).toBe(9);
  });

  it('grows without moving what is written, across many chunks', () => {
    const writer = new KafkaWriter({ initialSizeBytes: 16 });
    for (let index = 0; index < 10_000; index++) writer.writeInt32(index);
    const buffer = writer.toBuffer();
    expect(buffer.length).toBe(40_000);
    expect(buffer.readInt32BE(4 * 9_999)).toBe(9_999);
  });

  it('stops at its bound with MESSAGE_TOO_LARGE', () => {
    const writer = new KafkaWriter({ sizeBytesMax: 100 });
    writer.writeBytes(Buffer.alloc(90), false);
    expect(() => writer.writeBytes(Buffer.alloc(10), false)).toThrow(
      /larger than the writer's bound/,
    );
    expect(() =>
      new KafkaWriter({ sizeBytesMax: 10 }).writeRecords(Buffer.alloc(5000), true),
    ).toThrow(expect.objectContaining({ code: 'MESSAGE_TOO_LARGE' }));
  });
});

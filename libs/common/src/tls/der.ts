// The DER encoding (ITU-T X.690) of the few ASN.1 types an X.509 certificate needs: enough for
// certificate-authority.ts to build a TBSCertificate that node:crypto then signs. Every function
// returns the whole TLV (tag, length, value) as a Buffer; nothing here parses.

/** Tags of the universal types used, and the context-specific ones of X.509. */
export const DerTag = {
  Boolean: 0x01,
  Integer: 0x02,
  BitString: 0x03,
  OctetString: 0x04,
  ObjectIdentifier: 0x06,
  Utf8String: 0x0c,
  PrintableString: 0x13,
  Ia5String: 0x16,
  UtcTime: 0x17,
  GeneralizedTime: 0x18,
  Sequence: 0x30,
  Set: 0x31,
} as const;

export function derTlv(tag: number, value: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), derLength(value.length), value]);
}

function derLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

export function derSequence(...items: readonly Buffer[]): Buffer {
  return derTlv(DerTag.Sequence, Buffer.concat(items));
}

export function derSet(...items: readonly Buffer[]): Buffer {
  return derTlv(DerTag.Set, Buffer.concat(items));
}

export function derBoolean(value: boolean): Buffer {
  return derTlv(DerTag.Boolean, Buffer.from([value ? 0xff : 0x00]));
}

/** A non-negative integer from its big-endian bytes: leading zeros dropped, a sign byte added. */
export function derUnsignedInteger(bigEndian: Buffer): Buffer {
  let start = 0;
  while (start < bigEndian.length - 1 && bigEndian[start] === 0) start++;
  const trimmed = bigEndian.subarray(start);
  const needsSignByte = trimmed.length === 0 || (trimmed[0] as number) >= 0x80;
  return derTlv(
    DerTag.Integer,
    needsSignByte ? Buffer.concat([Buffer.from([0]), trimmed]) : Buffer.from(trimmed),
  );
}

export function derSmallInteger(value: number): Buffer {
  if (!Number.isSafeInteger(value) || value < 0 || value > 0xffff_ffff) {
    throw new RangeError(`derSmallInteger takes 0..2^32-1, got ${value}`);
  }
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(value);
  return derUnsignedInteger(bytes);
}

export function derObjectIdentifier(dotted: string): Buffer {
  const arcs = dotted.split('.').map((arc) => Number(arc));
  if (arcs.length < 2 || arcs.some((arc) => !Number.isSafeInteger(arc) || arc < 0)) {
    throw new RangeError(`not an object identifier: ${dotted}`);
  }
  const [first, second, ...rest] = arcs as [number, number, ...number[]];
  const bytes: number[] = [];
  for (const arc of [first * 40 + second, ...rest]) {
    const base128: number[] = [arc % 128];
    for (let high = Math.floor(arc / 128); high > 0; high = Math.floor(high / 128)) {
      base128.unshift(0x80 | (high % 128));
    }
    bytes.push(...base128);
  }
  return derTlv(DerTag.ObjectIdentifier, Buffer.from(bytes));
}

export function derOctetString(value: Buffer): Buffer {
  return derTlv(DerTag.OctetString, value);
}

/** A BIT STRING whose bits are whole bytes (a key, a signature): zero unused bits. */
export function derBitString(bytes: Buffer): Buffer {
  return derTlv(DerTag.BitString, Buffer.concat([Buffer.from([0]), bytes]));
}

/**
 * A named BIT STRING (keyUsage) from the numbers of its set bits, bit 0 being the most
 * significant bit of the first byte; DER drops trailing zero bits and counts them as unused.
 */
export function derNamedBits(bitNumbers: readonly number[]): Buffer {
  if (bitNumbers.length === 0) return derTlv(DerTag.BitString, Buffer.from([0]));
  const highest = Math.max(...bitNumbers);
  const bytes = Buffer.alloc(Math.floor(highest / 8) + 1);
  for (const bit of bitNumbers) {
    const index = Math.floor(bit / 8);
    bytes[index] = (bytes[index] as number) | (0x80 >> (bit % 8));
  }
  const unusedBits = 7 - (highest % 8);
  return derTlv(DerTag.BitString, Buffer.concat([Buffer.from([unusedBits]), bytes]));
}

export function derUtf8String(value: string): Buffer {
  return derTlv(DerTag.Utf8String, Buffer.from(value, 'utf8'));
}

/** UTCTime up to 2049 and GeneralizedTime from 2050, as RFC 5280 section 4.1.2.5 requires. */
export function derTime(date: Date): Buffer {
  const iso = date.toISOString(); // 2026-12-02T08:51:50.123Z
  const digits =
    `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}` +
    `${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  const year = date.getUTCFullYear();
  if (year < 1950 || year > 9999) throw new RangeError(`no X.509 time for the year ${year}`);
  return year < 2050
    ? derTlv(DerTag.UtcTime, Buffer.from(digits.slice(2), 'ascii'))
    : derTlv(DerTag.GeneralizedTime, Buffer.from(digits, 'ascii'));
}

/** A context-specific tag [n]: constructed (explicit, wraps a TLV) or primitive (implicit). */
export function derContext(tagNumber: number, value: Buffer, constructed: boolean): Buffer {
  return derTlv((constructed ? 0xa0 : 0x80) | tagNumber, value);
}

/**
 * CRC-32C (Castagnoli, the polynomial Kafka and ext4 use), table-driven, one byte at a time.
 * The local store checksums a few records per second at most, so a pure-JavaScript table is fast
 * enough and keeps the metadata library free of native dependencies.
 */
const castagnoliReversed = 0x82f63b78;

const table = buildTable();

function buildTable(): Uint32Array {
  const entries = new Uint32Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 1 ? (crc >>> 1) ^ castagnoliReversed : crc >>> 1;
    }
    entries[byte] = crc >>> 0;
  }
  return entries;
}

/** The CRC-32C of the bytes, as an unsigned 32-bit number. */
export function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (let index = 0; index < bytes.length; index++) {
    crc = table[(crc ^ bytes[index]!) & 0xff]! ^ (crc >>> 8);
  }
  return (crc ^ 0xffffffff) >>> 0;
}

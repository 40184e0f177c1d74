// Proves the table-driven CRC-32C against the published check values (RFC 3720, appendix B.4),
// so journal checksums agree with every other CRC-32C implementation.
import { describe, expect, it } from 'vitest';
import { crc32c } from './crc32c';

describe('crc32c', () => {
  it('matches the standard check values', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
    expect(crc32c(Buffer.alloc(0))).toBe(0);
    expect(crc32c(Buffer.alloc(32, 0x00))).toBe(0x8a9136aa);
    expect(crc32c(Buffer.alloc(32, 0xff))).toBe(0x62a8ab43);
    expect(crc32c(Buffer.from(Array.from({ length: 32 }, (_, index) => index)))).toBe(0x46dd794e);
  });
});

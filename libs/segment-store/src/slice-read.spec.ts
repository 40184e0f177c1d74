// Proves readSliceInto copies exactly a slice's bytes to the asked place of a buffer, reports a
// file truncated under the slice as FILE_TRUNCATED, and refuses a target too small for it.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileTruncatedError, readSliceInto } from './index';

let directory: string;
let content: Buffer;
let filePath: string;
let file: { fd: number; path: string };

beforeAll(() => {
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-slice-read-'));
  filePath = path.join(directory, '00000000000000000000.log');
  content = randomBytes(100_000);
  fs.writeFileSync(filePath, content);
  file = { fd: fs.openSync(filePath, 'r'), path: filePath };
});

afterAll(() => {
  fs.closeSync(file.fd);
  fs.rmSync(directory, { recursive: true, force: true });
});

describe('readSliceInto', () => {
  it('copies the slice to the target offset and touches nothing else', () => {
    const target = Buffer.alloc(5_000, 0xaa);
    readSliceInto({ file, position: 12_345, sizeBytes: 4_000 }, target, 600);
    expect(target.subarray(600, 4_600)).toEqual(content.subarray(12_345, 16_345));
    expect(target.subarray(0, 600).every((byte) => byte === 0xaa)).toBe(true);
    expect(target.subarray(4_600).every((byte) => byte === 0xaa)).toBe(true);
  });

  it('refuses a target the slice does not fit', () => {
    expect(() =>
      readSliceInto({ file, position: 0, sizeBytes: 100 }, Buffer.alloc(150), 51),
    ).toThrow(RangeError);
  });

  it('reports FILE_TRUNCATED for a file that shrank under the slice', () => {
    const shortPath = path.join(directory, 'short.log');
    fs.writeFileSync(shortPath, content.subarray(0, 2_000));
    const shortFile = { fd: fs.openSync(shortPath, 'r'), path: shortPath };
    try {
      fs.truncateSync(shortPath, 1_000);
      let failure: unknown;
      try {
        readSliceInto({ file: shortFile, position: 500, sizeBytes: 1_000 }, Buffer.alloc(1_000), 0);
      } catch (error) {
        failure = error;
      }
      expect(failure).toBeInstanceOf(FileTruncatedError);
      expect(failure).toMatchObject({
        code: 'FILE_TRUNCATED',
        fileSizeBytes: 1_000,
        position: 500,
      });
    } finally {
      fs.closeSync(shortFile.fd);
    }
  });
});

// Proves the addon's write-out against a real file: starting the write-out of a dirty range
// resolves (sync_file_range accepted it), and a descriptor that is not open rejects with EBADF
// named like Node's own system errors. Skipped when the addon is not built.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadWritebackBinding } from './native-writeback';
import { temporaryDirectory } from './testing';

const binding = loadWritebackBinding();
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

describe.skipIf(binding === undefined)('startWriteback', () => {
  it('starts the write-out of a dirty range of a file', async () => {
    const temporary = temporaryDirectory();
    cleanups.push(temporary.remove);
    const filePath = path.join(temporary.directory, 'segment.log');
    const fd = fs.openSync(filePath, 'w+');
    cleanups.push(() => fs.closeSync(fd));
    fs.writeSync(fd, Buffer.alloc(3 * 1024 * 1024, 7));
    await expect(binding!.startWriteback(fd, 0, 3 * 1024 * 1024)).resolves.toBeUndefined();
    // A range past the end is not an error either: there is nothing to write.
    await expect(binding!.startWriteback(fd, 8 * 1024 * 1024, 4096)).resolves.toBeUndefined();
  });

  it('rejects a descriptor that is not open with EBADF', async () => {
    await expect(binding!.startWriteback(999_999, 0, 4096)).rejects.toMatchObject({
      code: 'EBADF',
      syscall: 'sync_file_range',
    });
  });

  it('refuses arguments that are not non-negative integers', () => {
    const startWriteback = binding!.startWriteback as (...args: unknown[]) => unknown;
    expect(() => startWriteback(3, 0)).toThrow(
      new TypeError('startWriteback(fileFd, position, count) takes 3 arguments'),
    );
    expect(() => binding!.startWriteback(-1, 0, 1)).toThrow(/fileFd out of range/);
    expect(() => binding!.startWriteback(3, 0.5, 1)).toThrow(/position must be/);
  });
});

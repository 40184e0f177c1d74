// Proves the bounded open-file cache on real files and descriptors: the count never passes the
// bound (checked against /proc/self/fd too), the least recently used file is the one closed, a
// file closed by the cache reopens with its bytes intact (never truncated), a pinned descriptor
// survives any number of opens (a sendfile transfer over a real loopback socket to a paused
// reader, while 40 other files open, delivers every byte), every pinned file pushes the count
// over the bound only until unpinned, a file closed or deleted while pinned stays readable until
// the last unpin, and logs whose files outnumber the bound keep appending and reading.
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { FileHandleCache, type CachedFile } from './file-handle-cache';
import { activeTransferPath, writeTo } from './file-records';
import { Log } from './log';
import { SegmentFile } from './segment-file';
import { batchOf, recordsOf, temporaryDirectory } from './testing';

const folders: Array<{ remove(): void }> = [];
afterEach(() => {
  for (const folder of folders.splice(0)) folder.remove();
});

function folder(): string {
  const made = temporaryDirectory('spool-file-cache-');
  folders.push(made);
  return made.directory;
}

/** `count` files holding their own names, each a CachedFile of `cache` (nothing opened yet). */
function filesIn(directory: string, cache: FileHandleCache, count: number): CachedFile[] {
  return Array.from({ length: count }, (_, index) => {
    const filePath = path.join(directory, `file-${index}`);
    fs.writeFileSync(filePath, `file-${index}`);
    return cache.file(filePath, 'r+');
  });
}

function contentOf(file: CachedFile): string {
  const bytes = Buffer.alloc(64);
  const read = fs.readSync(file.fd, bytes, 0, bytes.length, 0);
  return bytes.subarray(0, read).toString();
}

/** Descriptors this process has open on files under `directory`, from /proc/self/fd. */
function descriptorsUnder(directory: string): number {
  let count = 0;
  for (const name of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${name}`).startsWith(directory)) count++;
    } catch {
      // The descriptor readdir itself used is gone by now.
    }
  }
  return count;
}

describe('FileHandleCache', () => {
  it('closes the least recently used files to stay within its bound', () => {
    const directory = folder();
    const cache = new FileHandleCache(8);
    const files = filesIn(directory, cache, 20);
    for (const file of files) expect(contentOf(file)).toMatch(/^file-/);
    expect(cache.statistics).toEqual({
      openFiles: 8,
      openFilesMax: 8,
      evictionsTotal: 12,
      opensTotal: 20,
    });
    expect(descriptorsUnder(directory)).toBe(8);
    expect(files.map((file) => file.isOpen)).toEqual([
      ...Array<boolean>(12).fill(false),
      ...Array<boolean>(8).fill(true),
    ]);

    // A use makes a file the most recently used: file 12 survives the next open, 13 goes.
    expect(contentOf(files[12]!)).toBe('file-12');
    expect(contentOf(files[0]!)).toBe('file-0');
    expect(files[12]!.isOpen).toBe(true);
    expect(files[13]!.isOpen).toBe(false);
    expect(cache.statistics.openFiles).toBe(8);
    for (const file of files) file.close();
    expect(cache.statistics.openFiles).toBe(0);
    expect(descriptorsUnder(directory)).toBe(0);
  });

  it('reopens a file it closed without truncating it, and writes land in the same file', () => {
    const directory = folder();
    const cache = new FileHandleCache(8);
    const created = cache.create(path.join(directory, 'created'), 'w+', 'r+');
    fs.writeSync(created.fd, Buffer.from('first'), 0, 5, 0);
    const others = filesIn(directory, cache, 8);
    for (const other of others) contentOf(other);
    expect(created.isOpen).toBe(false);
    fs.writeSync(created.fd, Buffer.from(' second'), 0, 7, 5);
    expect(created.isOpen).toBe(true);
    expect(fs.readFileSync(path.join(directory, 'created'), 'utf8')).toBe('first second');
    expect(cache.statistics.opensTotal).toBe(10);
  });

  it('names the file when a reopen fails', () => {
    const directory = folder();
    const cache = new FileHandleCache(8);
    const [file] = filesIn(directory, cache, 1);
    fs.rmSync(file!.path);
    expect(() => file!.fd).toThrow(`open of ${file!.path} failed`);
    expect(cache.statistics.openFiles).toBe(0);
  });

  it('never closes a pinned file, and evicts back to the bound at the unpin', () => {
    const directory = folder();
    const cache = new FileHandleCache(8);
    const files = filesIn(directory, cache, 12);
    const pinnedFds = files.slice(0, 8).map((file) => file.pin());
    // Every open file is pinned: four more opens pass the bound rather than fail.
    for (const file of files.slice(8)) expect(contentOf(file)).toMatch(/^file-/);
    expect(cache.statistics.openFiles).toBe(9);
    expect(files.slice(0, 8).every((file) => file.isOpen)).toBe(true);
    expect(files.slice(0, 8).map((file) => file.fd)).toEqual(pinnedFds);
    for (const file of files.slice(0, 8)) file.unpin();
    expect(cache.statistics.openFiles).toBe(8);
    expect(descriptorsUnder(directory)).toBe(8);
  });

  it('keeps a file closed or deleted while pinned readable until the last unpin', () => {
    const directory = folder();
    const cache = new FileHandleCache(8);
    const segment = SegmentFile.create(cache, path.join(directory, 'segment.log'));
    fs.writeSync(segment.fd, 'still here');
    const reader = segment.acquire();
    segment.delete();
    expect(fs.existsSync(segment.path)).toBe(false);
    filesIn(directory, cache, 20).forEach(contentOf);
    const bytes = Buffer.alloc(10);
    fs.readSync(reader.fd, bytes, 0, 10, 0);
    expect(bytes.toString()).toBe('still here');
    const before = cache.statistics.openFiles;
    reader.release();
    expect(cache.statistics.openFiles).toBe(before - 1);
    expect(() => segment.fd).toThrow('use of a closed cached file');
  });

  it('refuses a bound below the minimum', () => {
    expect(() => new FileHandleCache(7)).toThrow('openFilesMax is below the minimum');
  });
});

describe('FileHandleCache under a transfer', () => {
  it('keeps a sendfile transfer to a paused reader reading while 40 other files open', async () => {
    const directory = folder();
    const cache = new FileHandleCache(8);
    const content = randomBytes(8 * 1024 * 1024);
    const segment = SegmentFile.create(cache, path.join(directory, 'big.log'));
    fs.writeSync(segment.fd, content);
    const server = net.createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const receiverReady = once(server, 'connection') as Promise<[net.Socket]>;
    const sender = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    await once(sender, 'connect');
    const [receiver] = await receiverReady;
    receiver.pause();
    try {
      const slice = { file: segment.acquire(), position: 0, sizeBytes: content.length };
      const transfer = writeTo(sender, slice, { path: activeTransferPath() });
      // The socket buffers fill; the transfer now waits with the descriptor pinned.
      await sleep(50);
      for (const other of filesIn(directory, cache, 40)) contentOf(other);
      expect(segment.acquire().fd).toBe(slice.file.fd);
      segment.release();
      const received: Buffer[] = [];
      receiver.on('data', (chunk: Buffer) => received.push(chunk));
      receiver.resume();
      expect(await transfer).toBe(content.length);
      await new Promise<void>((resolve) => {
        const check = (): void => {
          if (Buffer.concat(received).length >= content.length) resolve();
          else setTimeout(check, 5);
        };
        check();
      });
      expect(Buffer.concat(received).equals(content)).toBe(true);
      slice.file.release();
      expect(cache.statistics.openFiles).toBeLessThanOrEqual(8);
    } finally {
      sender.destroy();
      receiver.destroy();
      server.close();
    }
  });
});

describe('logs sharing a small FileHandleCache', () => {
  it('append and read 30 logs (90 files) through 8 descriptors, and reopen them after close', async () => {
    const directory = folder();
    const cache = new FileHandleCache(8);
    const logs: Log[] = [];
    for (let index = 0; index < 30; index++) {
      const { log } = await Log.open(path.join(directory, `topic-${index}`), { files: cache });
      logs.push(log);
    }
    for (let round = 0; round < 3; round++) {
      for (const [index, log] of logs.entries()) {
        log.append(batchOf(2, { label: `log-${index}-round-${round}` }), {
          leaderEpoch: 0,
          assignOffsets: true,
        });
        expect(cache.statistics.openFiles).toBeLessThanOrEqual(8);
      }
    }
    expect(descriptorsUnder(directory)).toBeLessThanOrEqual(8);
    for (const [index, log] of logs.entries()) {
      const read = log.read(0n, 1 << 20);
      expect(recordsOf(read.slices).map((record) => record.value)).toEqual(
        [0, 1, 2].flatMap((round) => [
          `log-${index}-round-${round}-0`,
          `log-${index}-round-${round}-1`,
        ]),
      );
      read.release();
    }
    expect(cache.statistics.evictionsTotal).toBeGreaterThan(0);
    for (const log of logs) await log.close();
    expect(cache.statistics.openFiles).toBe(0);
    expect(descriptorsUnder(directory)).toBe(0);

    const reopened = await Log.open(path.join(directory, 'topic-7'), { files: cache });
    expect(reopened.report.clean).toBe(true);
    expect(reopened.log.logEndOffset).toBe(6n);
    await reopened.log.close();
  });
});

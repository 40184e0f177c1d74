// Proves writeTo moves file slices byte-exact over a real loopback TCP socket on both paths
// (sendfile and copy), comparing sha256 digests taken on the receiving side against the random
// bytes of a real temp file: small, mid-file and 64 MiB slices, pipelined slices in order, a
// paused reader (EAGAIN handled while a setInterval keeps ticking), a file truncated before
// and during a transfer (typed error), and a peer closing mid-transfer (rejection, no leaked fd).
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  activeTransferPath,
  type FileSlice,
  inlineCopyBytesMax,
  FileTruncatedError,
  type SegmentFileHandle,
  SegmentStoreError,
  socketTransfersPendingMax,
  type TransferPath,
  writeTo,
} from './index';

const mebibyte = 1024 * 1024;
const dataFileBytes = 65 * mebibyte;

let temporaryDirectory: string;
let dataFile: SegmentFileHandle;
let dataFileContent: Buffer;

beforeAll(() => {
  temporaryDirectory = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-file-records-'));
  dataFileContent = randomBytes(dataFileBytes);
  dataFile = writeTemporaryFile('00000000000000000000.log', dataFileContent);
});

afterAll(() => {
  fs.closeSync(dataFile.fd);
  fs.rmSync(temporaryDirectory, { recursive: true, force: true });
});

function writeTemporaryFile(name: string, content: Buffer): SegmentFileHandle {
  const filePath = path.join(temporaryDirectory, name);
  fs.writeFileSync(filePath, content);
  return { fd: fs.openSync(filePath, 'r'), path: filePath };
}

/** Truncates through a descriptor of its own, as the log's `truncateTo` would. */
function truncateFile(filePath: string, sizeBytes: number): void {
  const writable = fs.openSync(filePath, 'r+');
  try {
    fs.ftruncateSync(writable, sizeBytes);
  } finally {
    fs.closeSync(writable);
  }
}

function sha256(...parts: Buffer[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest('hex');
}

function bytesOf(slice: FileSlice): Buffer {
  return dataFileContent.subarray(slice.position, slice.position + slice.sizeBytes);
}

interface Loopback {
  /** The side writeTo writes to, as a broker's accepted connection. */
  readonly sender: net.Socket;
  /** The side that reads, as a consumer. */
  readonly receiver: net.Socket;
}

async function connectLoopback(): Promise<Loopback> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  const accepted = once(server, 'connection');
  const receiver = net.connect(port, '127.0.0.1');
  await once(receiver, 'connect');
  const [sender] = (await accepted) as [net.Socket];
  // Stop listening now; close()'s callback would wait for the connection to end as well.
  server.close();
  // A broker listens for socket errors; without a listener a reset peer would crash the test.
  sender.on('error', () => undefined);
  receiver.on('error', () => undefined);
  return { sender, receiver };
}

async function closeLoopback({ sender, receiver }: Loopback): Promise<void> {
  const closed = [sender, receiver]
    .filter((socket) => !socket.closed)
    .map((socket) => once(socket, 'close'));
  sender.destroy();
  receiver.destroy();
  await Promise.all(closed);
}

interface Received {
  readonly sizeBytes: number;
  readonly sha256: string;
}

/**
 * Hashes what arrives on `socket` until `sizeBytes` arrived (a longer stream shows in the size)
 * or the socket closed (a shorter one does).
 */
function receive(socket: net.Socket, sizeBytes: number): Promise<Received> {
  const hash = createHash('sha256');
  let receivedBytes = 0;
  return new Promise((resolve) => {
    const onData = (chunk: Buffer): void => {
      hash.update(chunk);
      receivedBytes += chunk.length;
      if (receivedBytes < sizeBytes) return;
      socket.off('data', onData);
      socket.off('close', onClose);
      resolve({ sizeBytes: receivedBytes, sha256: hash.digest('hex') });
    };
    const onClose = (): void => resolve({ sizeBytes: receivedBytes, sha256: hash.digest('hex') });
    socket.on('data', onData);
    socket.once('close', onClose);
  });
}

function openFileDescriptorCount(): number {
  return fs.readdirSync('/proc/self/fd').length;
}

/** Descriptors of this process open on `filePath`; the test's own handle is one of them. */
function descriptorsOpenOn(filePath: string): number {
  let count = 0;
  for (const entry of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${entry}`) === filePath) count += 1;
    } catch {
      // The descriptor readdir itself used, closed by now.
    }
  }
  return count;
}

for (const transferPath of ['sendfile', 'copy'] as const satisfies readonly TransferPath[]) {
  // Without a compiler at install the addon is absent and only the copy path can be tested.
  const addonMissing = transferPath === 'sendfile' && activeTransferPath() !== 'sendfile';

  describe.skipIf(addonMissing)(`writeTo over loopback TCP, ${transferPath} path`, () => {
    const options = { path: transferPath } as const;

    async function expectTransferred(slices: FileSlice[], prefix = Buffer.alloc(0)): Promise<void> {
      const connection = await connectLoopback();
      try {
        const totalBytes = prefix.length + slices.reduce((sum, slice) => sum + slice.sizeBytes, 0);
        const received = receive(connection.receiver, totalBytes);
        if (prefix.length > 0) connection.sender.write(prefix);
        const written = await Promise.all(
          slices.map((slice) => writeTo(connection.sender, slice, options)),
        );
        expect(written).toEqual(slices.map((slice) => slice.sizeBytes));
        expect(await received).toEqual({
          sizeBytes: totalBytes,
          sha256: sha256(prefix, ...slices.map(bytesOf)),
        });
      } finally {
        await closeLoopback(connection);
      }
    }

    it('moves a small slice at the start of the file', async () => {
      await expectTransferred([{ file: dataFile, position: 0, sizeBytes: 100 }]);
    });

    it('moves a slice from the middle of the file', async () => {
      await expectTransferred([{ file: dataFile, position: 12_345_677, sizeBytes: 3_000_001 }]);
    });

    it('moves hot slices (the recent tail) byte-exact, on the event loop as far as the socket takes them', async () => {
      await expectTransferred([
        { file: dataFile, position: 1_000, sizeBytes: 300_000, hot: true },
        // More than the socket buffers hold: the rest of it goes through the pool path.
        { file: dataFile, position: 2 * mebibyte + 1, sizeBytes: 24 * mebibyte, hot: true },
        { file: dataFile, position: 17, sizeBytes: 100_001 },
      ]);
    });

    it('moves a 64 MiB slice byte-exact', async () => {
      await expectTransferred([
        { file: dataFile, position: mebibyte - 7, sizeBytes: 64 * mebibyte },
      ]);
    });

    it('keeps pipelined slices in call order, after bytes queued by socket.write', async () => {
      const slices = [
        { file: dataFile, position: 40 * mebibyte, sizeBytes: 5 * mebibyte + 3 },
        { file: dataFile, position: 0, sizeBytes: 1 },
        { file: dataFile, position: 7, sizeBytes: 2 * mebibyte },
        { file: dataFile, position: 60 * mebibyte, sizeBytes: 123_457 },
        { file: dataFile, position: 3, sizeBytes: 0 },
      ];
      // Larger than the kernel's socket buffers, so part of it still sits in Node's write queue
      // when the first transfer starts.
      const prefix = randomBytes(16 * mebibyte);
      await expectTransferred(slices, prefix);
    });

    it('sends each header right before its slice, as one transfer: hot, cold, small and empty slices', async () => {
      const connection = await connectLoopback();
      try {
        const transfers = [
          { file: dataFile, position: 9, sizeBytes: 3 * mebibyte + 5, hot: true },
          { file: dataFile, position: 20 * mebibyte, sizeBytes: 2 * mebibyte },
          { file: dataFile, position: 100, sizeBytes: 70 },
          { file: dataFile, position: 0, sizeBytes: 0 },
          // More than the socket buffers hold: header and slice wait for the reader together.
          { file: dataFile, position: 30 * mebibyte, sizeBytes: 24 * mebibyte, hot: true },
        ].map((slice, index) => ({ slice, header: Buffer.from(`header ${index} of a response`) }));
        const totalBytes = transfers.reduce(
          (sum, { slice, header }) => sum + header.length + slice.sizeBytes,
          0,
        );
        const received = receive(connection.receiver, totalBytes);
        const written = await Promise.all(
          transfers.map(({ slice, header }) =>
            writeTo(connection.sender, slice, { ...options, header }),
          ),
        );
        expect(written).toEqual(transfers.map(({ slice }) => slice.sizeBytes));
        expect(await received).toEqual({
          sizeBytes: totalBytes,
          sha256: sha256(...transfers.flatMap(({ slice, header }) => [header, bytesOf(slice)])),
        });
      } finally {
        await closeLoopback(connection);
      }
    });

    it('waits for a paused reader without blocking the event loop', async () => {
      const connection = await connectLoopback();
      try {
        // Larger than the send and receive buffers together, so the transfer must wait.
        const slice = { file: dataFile, position: 5, sizeBytes: 48 * mebibyte };
        connection.receiver.pause();
        let tickCount = 0;
        let lastTickAt = performance.now();
        let tickGapMsMax = 0;
        const ticker = setInterval(() => {
          const now = performance.now();
          tickGapMsMax = Math.max(tickGapMsMax, now - lastTickAt);
          lastTickAt = now;
          tickCount += 1;
        }, 5);
        let settledAt = Number.POSITIVE_INFINITY;
        const transfer = writeTo(connection.sender, slice, options).finally(() => {
          settledAt = performance.now();
        });
        await sleep(500);
        const resumedAt = performance.now();
        const received = receive(connection.receiver, slice.sizeBytes);
        connection.receiver.resume();
        expect(await transfer).toBe(slice.sizeBytes);
        clearInterval(ticker);

        expect(settledAt).toBeGreaterThan(resumedAt);
        expect(await received).toEqual({
          sizeBytes: slice.sizeBytes,
          sha256: sha256(bytesOf(slice)),
        });
        // A blocked loop would show one gap as long as the pause (500 ms) and a handful of ticks;
        // the bounds leave room for a loaded machine's scheduling (gaps of 150 ms were seen with
        // two cores running a dozen processes), never for a blocked loop.
        expect(tickCount).toBeGreaterThan(20);
        expect(tickGapMsMax).toBeLessThan(400);
      } finally {
        await closeLoopback(connection);
      }
    });

    it('rejects a slice of a file truncated before the transfer, and the socket stays usable', async () => {
      const file = writeTemporaryFile(
        `truncated-${transferPath}.log`,
        dataFileContent.subarray(0, mebibyte),
      );
      const connection = await connectLoopback();
      try {
        truncateFile(file.path, 1000);
        const failure = await writeTo(
          connection.sender,
          { file, position: 500, sizeBytes: 1000 },
          options,
        ).catch((error: unknown) => error);
        expect(failure).toBeInstanceOf(FileTruncatedError);
        expect(failure).toMatchObject({
          code: 'FILE_TRUNCATED',
          retriable: true,
          filePath: file.path,
          position: 500,
          sizeBytes: 1000,
          fileSizeBytes: 1000,
        });
        expect((failure as Error).message).toContain(file.path);
        expect(connection.sender.destroyed).toBe(false);

        const slice = { file: dataFile, position: 9, sizeBytes: 4096 };
        const received = receive(connection.receiver, slice.sizeBytes);
        await writeTo(connection.sender, slice, options);
        expect(await received).toEqual({
          sizeBytes: slice.sizeBytes,
          sha256: sha256(bytesOf(slice)),
        });
      } finally {
        fs.closeSync(file.fd);
        await closeLoopback(connection);
      }
    });

    it('rejects and closes the socket when the file is truncated during the transfer', async () => {
      const file = writeTemporaryFile(
        `shrinking-${transferPath}.log`,
        dataFileContent.subarray(0, 48 * mebibyte),
      );
      const connection = await connectLoopback();
      try {
        connection.receiver.pause();
        const transfer = writeTo(
          connection.sender,
          { file, position: 0, sizeBytes: 48 * mebibyte },
          options,
        );
        const failure = transfer.catch((error: unknown) => error);
        await sleep(100);
        truncateFile(file.path, 20 * mebibyte);
        connection.receiver.resume();
        expect(await failure).toMatchObject({
          code: 'FILE_TRUNCATED',
          fileSizeBytes: 20 * mebibyte,
        });
        expect(connection.sender.destroyed).toBe(true);
      } finally {
        fs.closeSync(file.fd);
        await closeLoopback(connection);
      }
    });

    it('rejects when the peer closes mid-transfer, and leaks no descriptor', async () => {
      const descriptorsBefore = openFileDescriptorCount();
      const connection = await connectLoopback();
      const slice = { file: dataFile, position: 0, sizeBytes: 64 * mebibyte };
      connection.receiver.once('data', () => connection.receiver.destroy());
      const failure = await writeTo(connection.sender, slice, options).catch(
        (error: unknown) => error,
      );

      expect(failure).toBeInstanceOf(SegmentStoreError);
      expect(failure).toMatchObject({ code: 'NETWORK_EXCEPTION', retriable: true });
      expect(connection.sender.destroyed).toBe(true);
      await closeLoopback(connection);
      await expect.poll(openFileDescriptorCount, { timeout: 2_000 }).toBe(descriptorsBefore);
      expect(descriptorsOpenOn(dataFile.path)).toBe(1);
    });

    it('rejects a transfer to a socket that is already closed, without touching it', async () => {
      const connection = await connectLoopback();
      await closeLoopback(connection);
      const failure = await writeTo(
        connection.sender,
        { file: dataFile, position: 0, sizeBytes: 10 },
        options,
      ).catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: 'NETWORK_EXCEPTION', retriable: true });
    });
  });
}

describe('writeTo without a forced path', () => {
  it(`copies slices up to ${inlineCopyBytesMax} bytes inline, in order with the others`, async () => {
    const connection = await connectLoopback();
    try {
      const slices = [
        { file: dataFile, position: 17, sizeBytes: 300 },
        { file: dataFile, position: 2 * mebibyte, sizeBytes: 3 * mebibyte + 1 },
        { file: dataFile, position: 5, sizeBytes: inlineCopyBytesMax },
        { file: dataFile, position: 11, sizeBytes: inlineCopyBytesMax + 1 },
        { file: dataFile, position: 9 * mebibyte, sizeBytes: 1 },
      ];
      const prefix = randomBytes(1000);
      const totalBytes = prefix.length + slices.reduce((sum, slice) => sum + slice.sizeBytes, 0);
      const received = receive(connection.receiver, totalBytes);
      connection.sender.write(prefix);
      const written = await Promise.all(slices.map((slice) => writeTo(connection.sender, slice)));
      expect(written).toEqual(slices.map((slice) => slice.sizeBytes));
      expect(await received).toEqual({
        sizeBytes: totalBytes,
        sha256: sha256(prefix, ...slices.map(bytesOf)),
      });
      // Node counts what went through its own queue: the inline copies, not what sendfile moved.
      const inlineBytes = slices
        .filter((slice) => slice.sizeBytes <= inlineCopyBytesMax)
        .reduce((sum, slice) => sum + slice.sizeBytes, 0);
      const expectedBytesWritten =
        activeTransferPath() === 'sendfile' ? prefix.length + inlineBytes : totalBytes;
      expect(connection.sender.bytesWritten).toBe(expectedBytesWritten);
    } finally {
      await closeLoopback(connection);
    }
  });

  it('sends a header with its slice: in the inline write, or straight to the kernel before a sendfile', async () => {
    const connection = await connectLoopback();
    try {
      const small = { file: dataFile, position: 3, sizeBytes: 500 };
      const hot = { file: dataFile, position: 7 * mebibyte, sizeBytes: 2 * mebibyte, hot: true };
      const [smallHeader, hotHeader] = [randomBytes(40), randomBytes(60)];
      const totalBytes = smallHeader.length + small.sizeBytes + hotHeader.length + hot.sizeBytes;
      const received = receive(connection.receiver, totalBytes);
      await writeTo(connection.sender, small, { header: smallHeader });
      await writeTo(connection.sender, hot, { header: hotHeader });
      expect(await received).toEqual({
        sizeBytes: totalBytes,
        sha256: sha256(smallHeader, bytesOf(small), hotHeader, bytesOf(hot)),
      });
      // Node counts what went through its own queue: the inline write, header included; with
      // the addon, the second header went to the kernel directly (MSG_MORE), as its slice did.
      const expectedBytesWritten =
        activeTransferPath() === 'sendfile' ? smallHeader.length + small.sizeBytes : totalBytes;
      expect(connection.sender.bytesWritten).toBe(expectedBytesWritten);
    } finally {
      await closeLoopback(connection);
    }
  });

  it('rejects a small slice of a truncated file before writing, and the socket stays usable', async () => {
    const file = writeTemporaryFile('truncated-inline.log', dataFileContent.subarray(0, 4096));
    const connection = await connectLoopback();
    try {
      truncateFile(file.path, 1000);
      const failure = await writeTo(connection.sender, {
        file,
        position: 500,
        sizeBytes: 1000,
      }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(FileTruncatedError);
      expect(failure).toMatchObject({ code: 'FILE_TRUNCATED', fileSizeBytes: 1000 });
      expect(connection.sender.destroyed).toBe(false);
      expect(connection.sender.bytesWritten).toBe(0);

      const slice = { file: dataFile, position: 9, sizeBytes: 4096 };
      const received = receive(connection.receiver, slice.sizeBytes);
      await writeTo(connection.sender, slice);
      expect(await received).toEqual({
        sizeBytes: slice.sizeBytes,
        sha256: sha256(bytesOf(slice)),
      });
    } finally {
      fs.closeSync(file.fd);
      await closeLoopback(connection);
    }
  });
});

describe('writeTo queue bound', () => {
  it(`refuses more than ${socketTransfersPendingMax} pending transfers on one socket`, async () => {
    const connection = await connectLoopback();
    try {
      // A paused reader and a slice larger than the socket buffers keep the first one running.
      connection.receiver.pause();
      const slices = Array.from({ length: socketTransfersPendingMax }, (_, index) => ({
        file: dataFile,
        position: index,
        sizeBytes: index === 0 ? 32 * mebibyte : 10,
      }));
      const transfers = slices.map((slice) => writeTo(connection.sender, slice));
      const refused = await writeTo(connection.sender, {
        file: dataFile,
        position: 0,
        sizeBytes: 1,
      }).catch((error: unknown) => error);
      expect(refused).toMatchObject({ code: 'TRANSFER_QUEUE_FULL', retriable: true });

      const totalBytes = slices.reduce((sum, slice) => sum + slice.sizeBytes, 0);
      const received = receive(connection.receiver, totalBytes);
      connection.receiver.resume();
      await Promise.all(transfers);
      expect(await received).toEqual({
        sizeBytes: totalBytes,
        sha256: sha256(...slices.map(bytesOf)),
      });
    } finally {
      await closeLoopback(connection);
    }
  });
});

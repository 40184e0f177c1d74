// Measurement 3: the fetch path. Slices of a log go to a loopback TCP socket through writeTo,
// once with the sendfile path and once with the copy path, as a broker answers a consumer that
// reads the log from the start: log.read of 1 MiB, writeTo of each slice, release.
//
// What is timed per path: the reads, the transfers and the releases, from the first read until
// the last slice was handed to the kernel. CPU is this process only (the receiver is a child
// process, see discard-receiver.ts), including the libuv pool threads that run sendfile(2) and
// fs.read. The paths alternate copy, sendfile, copy, sendfile, half the bytes each time, and
// each path's totals are summed.
import { once } from 'node:events';
import * as net from 'node:net';
import * as fs from 'node:fs';
import { activeTransferPath, writeTo, type Log, type TransferPath } from './package-under-test';
import { startDiscardReceiver } from './discard-receiver';
import { measureAsync, sumOf, type Measurement } from './measurement';

/** Bytes per log.read, as a fetch for one partition asks. */
const transferReadMaxBytes = 1024 * 1024;
/** Reads whose slices may be queued on the socket at once: keeps the socket busy, bounded. */
const readsInFlightMax = 4;
const transferRounds = 2;

export interface PathThroughput {
  readonly sizeBytes: number;
  readonly measurement: Measurement;
}

export interface TransferThroughputResult {
  /** Undefined when the sendfile addon is not loaded; `unavailableReason` says why. */
  readonly sendfile: PathThroughput | undefined;
  readonly copy: PathThroughput;
  readonly unavailableReason: string | undefined;
}

export async function measureTransferThroughput(
  log: Log,
  sizeBytesPerPath: number,
): Promise<TransferThroughputResult> {
  const sendfileAvailable = activeTransferPath() === 'sendfile';
  const paths: TransferPath[] = sendfileAvailable ? ['copy', 'sendfile'] : ['copy'];
  const readStartOffsets = planSequentialReads(log);
  const receiver = await startDiscardReceiver();
  const measured = new Map<TransferPath, PathThroughput[]>();
  try {
    const sizeBytesPerRound = Math.ceil(sizeBytesPerPath / transferRounds);
    for (let round = 0; round < transferRounds; round++) {
      for (const path of paths) {
        const result = await sendOverLoopback(
          log,
          readStartOffsets,
          receiver.port,
          path,
          sizeBytesPerRound,
        );
        measured.set(path, [...(measured.get(path) ?? []), result]);
      }
    }
  } finally {
    receiver.stop();
  }
  const total = (path: TransferPath): PathThroughput | undefined => {
    const results = measured.get(path);
    if (results === undefined) return undefined;
    return {
      sizeBytes: results.reduce((sum, result) => sum + result.sizeBytes, 0),
      measurement: sumOf(results.map((result) => result.measurement)),
    };
  };
  return {
    sendfile: total('sendfile'),
    copy: total('copy')!,
    unavailableReason: sendfileAvailable ? undefined : 'the sendfile addon is not loaded',
  };
}

/**
 * The start offset of each 1 MiB read when the log is read from start to end, found before the
 * timing: a read result does not say where the next read starts, so the base offset of the batch
 * after the last slice is read from the file (or the next segment's base at a segment's end).
 */
function planSequentialReads(log: Log): bigint[] {
  const starts: bigint[] = [];
  const segmentBases = log.segmentBaseOffsets();
  const baseOffsetBytes = Buffer.alloc(8);
  let offset = log.logStartOffset;
  while (offset < log.logEndOffset) {
    starts.push(offset);
    const result = log.read(offset, transferReadMaxBytes);
    const last = result.slices.at(-1)!;
    const end = last.position + last.sizeBytes;
    const read = fs.readSync(last.file.fd, baseOffsetBytes, 0, 8, end);
    result.release();
    offset =
      read === 8
        ? baseOffsetBytes.readBigInt64BE(0)
        : (segmentBases.find((base) => base > offset) ?? log.logEndOffset);
  }
  return starts;
}

async function sendOverLoopback(
  log: Log,
  readStartOffsets: readonly bigint[],
  port: number,
  path: TransferPath,
  sizeBytesWanted: number,
): Promise<PathThroughput> {
  const socket = net.connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let sizeBytes = 0;
  try {
    const measurement = await measureAsync(async () => {
      const inFlight = new Set<Promise<void>>();
      for (let index = 0; sizeBytes < sizeBytesWanted; index++) {
        const result = log.read(
          readStartOffsets[index % readStartOffsets.length]!,
          transferReadMaxBytes,
        );
        sizeBytes += result.sizeBytes;
        const sent = Promise.all(result.slices.map((slice) => writeTo(socket, slice, { path })))
          .then(() => undefined)
          .finally(() => result.release());
        inFlight.add(sent);
        void sent.then(
          () => inFlight.delete(sent),
          () => undefined,
        );
        if (inFlight.size >= readsInFlightMax) await Promise.race(inFlight);
      }
      await Promise.all(inFlight);
    });
    return { sizeBytes, measurement };
  } finally {
    socket.end();
    socket.destroySoon();
  }
}

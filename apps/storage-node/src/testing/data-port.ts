// Helpers for the data-port tests: a real segment-like file of RecordBatch bytes, fetch results
// that count their releases, a server on a loopback port, and a raw socket for frames the client
// would never send. Test code: tsconfig.lib.json leaves src/testing/ out of the build.
import { createLogger } from '@spool/common';
import {
  type DataPortFetchRequest,
  type DataPortResponse,
  decodeDataPortResponse,
  FrameSplitter,
  responseHeaderBytes,
} from '@spool/protocol';
import { encodeRecordBatch } from '@spool/record-batch';
import type { FileSlice, SegmentFileHandle } from '@spool/segment-store';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { FetchPartitionResult, FetchResult } from '../data-port/data-port-handlers';
import { DataPortServer, type DataPortServerOptions } from '../data-port/data-port-server';

export const silentLogger = createLogger({ service: 'data-port-test', level: 'silent' });

export interface SegmentFixture {
  readonly file: SegmentFileHandle;
  /** The bytes of batch i, whose base offset is i. */
  readonly batches: readonly Buffer[];
  /** The file position of batch i; positions[batches.length] is the file size. */
  readonly positions: readonly number[];
  readonly content: Buffer;
  remove(): void;
}

/** A `.log` file of `batchCount` real RecordBatch v2 batches, opened read-only. */
export function createSegmentFixture(batchCount = 10): SegmentFixture {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-data-port-'));
  const batches = Array.from({ length: batchCount }, (_, index) =>
    encodeRecordBatch({
      baseOffset: BigInt(index),
      records: Array.from({ length: 1 + (index % 3) }, (_unused, record) => ({
        key: Buffer.from(`key-${index}`),
        value: Buffer.from(`value-${index}-${record}-`.padEnd(40 + index * 7, 'x')),
        timestampMs: 1_700_000_000_000n + BigInt(index),
      })),
    }),
  );
  const positions = [0];
  for (const batch of batches) positions.push(positions[positions.length - 1]! + batch.length);
  const content = Buffer.concat(batches);
  const filePath = path.join(directory, '00000000000000000000.log');
  fs.writeFileSync(filePath, content);
  const file = { fd: fs.openSync(filePath, 'r'), path: filePath };
  return {
    file,
    batches,
    positions,
    content,
    remove: () => {
      fs.closeSync(file.fd);
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** Batches [from, to) of the fixture as two slices (one when a single batch), as two segments. */
export function slicesOf(fixture: SegmentFixture, from: number, to: number): FileSlice[] {
  if (to <= from) return [];
  const middle = to - from === 1 ? to : from + Math.floor((to - from) / 2);
  const ranges =
    middle === to
      ? [[from, to]]
      : [
          [from, middle],
          [middle, to],
        ];
  return ranges.map(([start, end]) => ({
    file: fixture.file,
    position: fixture.positions[start!]!,
    sizeBytes: fixture.positions[end!]! - fixture.positions[start!]!,
  }));
}

/** Counts FetchResults handed out and their releases; a second release of one is recorded. */
export class ReleaseTracker {
  issued = 0;
  released = 0;
  releasedTwice = 0;

  result(partitions: readonly FetchPartitionResult[]): FetchResult {
    this.issued += 1;
    let released = false;
    return {
      partitions,
      release: () => {
        if (released) this.releasedTwice += 1;
        else this.released += 1;
        released = true;
      },
    };
  }
}

/** A partition answer with records. */
export function partitionResult(
  topic: string,
  partition: number,
  slices: readonly FileSlice[],
  fields: Partial<FetchPartitionResult> = {},
): FetchPartitionResult {
  return {
    topic,
    partition,
    errorCode: '',
    errorMessage: '',
    highWatermark: 10n,
    logStartOffset: 0n,
    logEndOffset: 10n,
    slices,
    sizeBytes: slices.reduce((total, slice) => total + slice.sizeBytes, 0),
    ...fields,
  };
}

export function fetchRequestFor(
  partitions: ReadonlyArray<{ topic: string; partition: number; fetchOffset: bigint }>,
  fields: Partial<DataPortFetchRequest> = {},
): DataPortFetchRequest {
  return {
    replicaId: -1,
    brokerEpoch: -1n,
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes: 1024 * 1024,
    partitions: partitions.map((partition) => ({
      ...partition,
      currentLeaderEpoch: -1,
      logStartOffset: -1n,
      partitionMaxBytes: 1024 * 1024,
    })),
    ...fields,
  };
}

export async function startServer(
  options: Omit<DataPortServerOptions, 'logger'> & { logger?: DataPortServerOptions['logger'] },
): Promise<{ server: DataPortServer; port: number }> {
  const server = new DataPortServer({ logger: silentLogger, ...options });
  const port = await server.listen('127.0.0.1', 0);
  return { server, port };
}

/** A raw connection that collects every byte until the server closes it. */
export async function rawConnection(
  port: number,
): Promise<{ socket: net.Socket; received: Promise<Buffer> }> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const received = once(socket, 'close').then(() => Buffer.concat(chunks));
  return { socket, received };
}

/** Every response frame in `bytes`, decoded; the bytes must end with a whole frame. */
export function responsesIn(bytes: Buffer): DataPortResponse[] {
  const splitter = new FrameSplitter({
    direction: 'response',
    frameBytesMax: () => Number.MAX_SAFE_INTEGER,
    headerBytesMin: responseHeaderBytes,
  });
  splitter.push(bytes);
  const responses: DataPortResponse[] = [];
  for (let frame = splitter.next(); frame !== undefined; frame = splitter.next()) {
    responses.push(decodeDataPortResponse(frame));
  }
  if (splitter.bufferedBytes !== 0) throw new Error(`${splitter.bufferedBytes} bytes left over`);
  return responses;
}

/** Resolves when `condition` holds, polling every 5 ms; rejects after `timeoutMs`. */
export async function eventually(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

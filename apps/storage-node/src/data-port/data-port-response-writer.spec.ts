// Proves how a FETCH response goes on the wire over a real loopback socket: records that fit
// inlineCopyBytesMax go in the same single write as the header (the peer wakes once), larger
// ones follow the header through writeTo; both decode to the same partitions and bytes, and a
// file truncated under a small response fails it before anything is written.
import { DataPortApiKey, type DataPortResponse } from '@spool/protocol';
import { inlineCopyBytesMax } from '@spool/segment-store';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sendFetchResponse } from './data-port-response-writer';
import {
  createSegmentFixture,
  partitionResult,
  ReleaseTracker,
  responsesIn,
  slicesOf,
  type SegmentFixture,
} from '../testing/data-port';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function loopback(): Promise<{ sender: net.Socket; received: () => Promise<Buffer> }> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const accepted = once(server, 'connection');
  const receiver = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  await once(receiver, 'connect');
  const [sender] = (await accepted) as [net.Socket];
  server.close();
  const chunks: Buffer[] = [];
  receiver.on('data', (chunk: Buffer) => chunks.push(chunk));
  cleanups.push(() => {
    sender.destroy();
    receiver.destroy();
  });
  return {
    sender,
    received: async () => {
      sender.end();
      await once(receiver, 'end');
      return Buffer.concat(chunks);
    },
  };
}

/** Counts socket.write calls on `socket`. */
function countWrites(socket: net.Socket): { readonly count: number } {
  const counter = { count: 0 };
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  socket.write = ((...args: unknown[]) => {
    counter.count += 1;
    return write(...args);
  }) as typeof socket.write;
  return counter;
}

/** The records of each partition of a FETCH response. */
function recordsOf(response: DataPortResponse | undefined): Buffer[] {
  if (response?.apiKey !== DataPortApiKey.Fetch) throw new Error('not a FETCH response');
  return response.body.partitions.map((partition) => partition.records);
}

function fixtureOf(batchCount: number): SegmentFixture {
  const fixture = createSegmentFixture(batchCount);
  cleanups.push(() => fixture.remove());
  return fixture;
}

describe('sendFetchResponse', () => {
  it('writes a small response, header and records of every partition, in one write', async () => {
    const fixture = fixtureOf(10);
    const { sender, received } = await loopback();
    const writes = countWrites(sender);
    const tracker = new ReleaseTracker();
    const result = tracker.result([
      partitionResult('a', 0, slicesOf(fixture, 0, 4)),
      partitionResult('b', 1, []),
      partitionResult('c', 2, slicesOf(fixture, 4, 10)),
    ]);
    const sent: Array<[string, number]> = [];
    await sendFetchResponse(sender, 7, result, (topic, sizeBytes) => sent.push([topic, sizeBytes]));

    expect(writes.count).toBe(1);
    const [response] = responsesIn(await received());
    expect(response!.correlationId).toBe(7);
    expect(recordsOf(response)).toEqual([
      Buffer.concat(fixture.batches.slice(0, 4)),
      Buffer.alloc(0),
      Buffer.concat(fixture.batches.slice(4, 10)),
    ]);
    expect(sent).toEqual([
      ['a', fixture.positions[4]!],
      ['c', fixture.positions[10]! - fixture.positions[4]!],
    ]);
  });

  it('sends records larger than inlineCopyBytesMax after the header, byte-exact', async () => {
    const fixture = fixtureOf(10);
    const { sender, received } = await loopback();
    const writes = countWrites(sender);
    // The same file slice repeated until the records exceed the inline bound.
    const slice = slicesOf(fixture, 0, 10)[0]!;
    const repeats = Math.ceil((inlineCopyBytesMax + 1) / slice.sizeBytes);
    const slices = Array.from({ length: repeats }, () => slice);
    const result = new ReleaseTracker().result([partitionResult('a', 0, slices)]);
    await sendFetchResponse(sender, 8, result, () => undefined);

    expect(writes.count).toBeGreaterThan(1);
    const [response] = responsesIn(await received());
    expect(recordsOf(response)[0]).toEqual(
      Buffer.concat(
        Array.from({ length: repeats }, () => fixture.content.subarray(0, slice.sizeBytes)),
      ),
    );
  });

  it('fails a small response whose file shrank before anything is written', async () => {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-response-writer-'));
    const filePath = path.join(directory, '00000000000000000000.log');
    fs.writeFileSync(filePath, Buffer.alloc(4096, 7));
    const file = { fd: fs.openSync(filePath, 'r'), path: filePath };
    cleanups.push(() => {
      fs.closeSync(file.fd);
      fs.rmSync(directory, { recursive: true, force: true });
    });
    const { sender } = await loopback();
    const writes = countWrites(sender);
    fs.truncateSync(filePath, 100);
    const result = new ReleaseTracker().result([
      partitionResult('a', 0, [{ file, position: 0, sizeBytes: 4096 }]),
    ]);
    const failure = await sendFetchResponse(sender, 9, result, () => undefined).catch(
      (error: unknown) => error,
    );
    expect(failure).toMatchObject({ code: 'FILE_TRUNCATED', fileSizeBytes: 100 });
    expect(writes.count).toBe(0);
  });
});

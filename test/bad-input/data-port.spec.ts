// Bad input on a storage node's data port (the binary TCP protocol of consumer and replica
// fetches): random bytes, frames cut short, oversize and undersize frame lengths, unknown API
// keys and versions, well-framed requests with mutated bodies and absurd fields. The node must
// answer what it can read with an ERROR frame that names the problem (and then close), or
// close; it must never crash, hang a connection, or stop serving well-formed fetches. Each run
// prints its seed (`SPOOL_FUZZ_SEED` replays it) and how many inputs it tried.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DataPortApiKey,
  consumerReplicaId,
  dataPortErrorApiKey,
  decodeDataPortResponse,
  encodeApiVersionsRequest,
  encodeFetchRequest,
  frameSizeFieldBytes,
  type DataPortResponse,
} from '@spool/protocol';
import { StorageTestCluster } from '../support/storage-cluster';
import { fuzzRandom, validBatch } from './fuzz-support';

const topic = 'wire';
const random = fuzzRandom();
/** How long a connection may stay open after the input is written before it counts as hung. */
const answerTimeoutMs = 3_000;
let cluster: StorageTestCluster;
let dataPort: number;
let inputsTried = 0;

beforeAll(async () => {
  console.log(
    `bad-input data-port fuzz seed ${random.seed} (SPOOL_FUZZ_SEED=${random.seed} replays it)`,
  );
  cluster = await StorageTestCluster.start(1);
  await cluster.createTopic(topic, 1, 1);
  const appended = await cluster.append(topic, 0, validBatch('kept', 3));
  expect(appended.results[0]!.error).toBeUndefined();
  dataPort = cluster.nodes.get(0)!.dataPort;
}, 60_000);

afterAll(async () => {
  console.log(`bad-input data-port fuzz: ${inputsTried} inputs tried (seed ${random.seed})`);
  await cluster?.stop();
});

interface Exchange {
  responses: DataPortResponse[];
  /** True when the server closed the connection; false when the client had to. */
  closedByServer: boolean;
}

/**
 * Writes `input` on a fresh connection, optionally half-closes, and collects every response
 * frame until the server closes or the timeout passes.
 */
function exchange(input: Buffer, options: { halfClose: boolean }): Promise<Exchange> {
  inputsTried++;
  return new Promise((resolve, reject) => {
    const socket = connect(dataPort, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      finish(false);
    }, answerTimeoutMs);
    let done = false;
    const finish = (closedByServer: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      try {
        resolve({ responses: splitResponses(Buffer.concat(chunks)), closedByServer });
      } catch (error) {
        reject(error as Error);
      }
    };
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('connect', () => {
      socket.write(input);
      if (options.halfClose) socket.end();
    });
  });
}

/**
 * The response frames in `bytes`. A peer's FIN is a disconnect on the data port, as in Kafka:
 * the server stops at once (aborting a long poll rather than holding it for a gone client), so
 * after a half-close the last frame may be cut short; every frame before it must be whole.
 */
function splitResponses(bytes: Buffer): DataPortResponse[] {
  const responses: DataPortResponse[] = [];
  for (let position = 0; position < bytes.length;) {
    if (isCutShort(bytes, position)) break;
    const frameBytes = frameSizeFieldBytes + bytes.readUInt32BE(position);
    responses.push(decodeDataPortResponse(bytes.subarray(position, position + frameBytes)));
    position += frameBytes;
  }
  return responses;
}

function isCutShort(bytes: Buffer, position: number): boolean {
  if (bytes.length - position < frameSizeFieldBytes) return true;
  return position + frameSizeFieldBytes + bytes.readUInt32BE(position) > bytes.length;
}

/** An ERROR answer: a code in Kafka's vocabulary and a message, then the connection closes. */
function expectErrorAnswer(result: Exchange, input: string, mentions: RegExp): void {
  expect(result.closedByServer, `${input}: the server left the connection open`).toBe(true);
  const error = result.responses.find((response) => response.apiKey === dataPortErrorApiKey);
  expect(error, `${input}: no ERROR frame`).toBeDefined();
  const body = error!.body as { errorCode: string; errorMessage: string };
  expect(body.errorCode, input).toMatch(/^[A-Z][A-Z_]+$/);
  expect(body.errorMessage, `${input}: ${body.errorCode}`).toMatch(mentions);
}

function frame(apiKey: number, apiVersion: number, correlationId: number, body: Buffer): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt32BE(8 + body.length, 0);
  header.writeUInt16BE(apiKey, 4);
  header.writeUInt16BE(apiVersion, 6);
  header.writeUInt32BE(correlationId, 8);
  return Buffer.concat([header, body]);
}

function wellFormedFetch(
  correlationId: number,
  overrides: Partial<{ maxBytes: number; partition: number; fetchOffset: bigint }> = {},
): Buffer {
  return encodeFetchRequest(correlationId, {
    replicaId: consumerReplicaId,
    brokerEpoch: -1n,
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: overrides.maxBytes ?? 1024 * 1024,
    partitions: [
      {
        topic,
        partition: overrides.partition ?? 0,
        fetchOffset: overrides.fetchOffset ?? 0n,
        currentLeaderEpoch: -1,
        logStartOffset: -1n,
        partitionMaxBytes: 1024 * 1024,
      },
    ],
  });
}

describe('bad input on the data port', () => {
  it('answers frames over the size bound, unknown APIs and versions with an ERROR naming them', async () => {
    const oversize = Buffer.alloc(8);
    oversize.writeUInt32BE(0xffffffff, 0);
    expectErrorAnswer(
      await exchange(oversize, { halfClose: false }),
      'a 4 GiB frame length',
      /size|bytes|large/i,
    );

    const undersize = Buffer.alloc(8);
    undersize.writeUInt32BE(3, 0);
    expectErrorAnswer(
      await exchange(undersize, { halfClose: false }),
      'a 3-byte frame',
      /size|bytes|short|header/i,
    );

    for (const apiKey of [7, 0x1234, 0xfffe]) {
      expectErrorAnswer(
        await exchange(frame(apiKey, 0, 11, Buffer.alloc(0)), { halfClose: false }),
        `apiKey ${apiKey}`,
        /api/i,
      );
    }
    expectErrorAnswer(
      await exchange(frame(DataPortApiKey.Fetch, 99, 12, Buffer.alloc(0)), { halfClose: false }),
      'fetch version 99',
      /version/i,
    );
  });

  it('refuses fetch bodies with absurd fields, naming the field', async () => {
    const hugeCount = wellFormedFetch(21);
    // The partition count sits after replicaId, brokerEpoch, maxWaitMs, minBytes and maxBytes.
    hugeCount.writeUInt32BE(0xffffffff, 12 + 4 + 8 + 4 + 4 + 4);
    expectErrorAnswer(
      await exchange(hugeCount, { halfClose: false }),
      'a partition count of 2^32-1',
      /partitions|count/i,
    );

    const negativeMaxBytes = wellFormedFetch(22, { maxBytes: -1 });
    expectErrorAnswer(
      await exchange(negativeMaxBytes, { halfClose: false }),
      'maxBytes -1',
      /maxBytes/,
    );

    const negativePartition = wellFormedFetch(23, { partition: -4 });
    expectErrorAnswer(
      await exchange(negativePartition, { halfClose: false }),
      'partition -4',
      /partition/,
    );

    const trailing = Buffer.concat([wellFormedFetch(24), Buffer.from([1, 2, 3])]);
    trailing.writeUInt32BE(trailing.length - 4, 0);
    expectErrorAnswer(
      await exchange(trailing, { halfClose: false }),
      'three trailing bytes',
      /left over|trailing|bytes/i,
    );
  });

  it('answers a fetch at an offset out of range with a per-partition error, not a crash', async () => {
    const result = await exchange(wellFormedFetch(31, { fetchOffset: 2n ** 62n }), {
      halfClose: true,
    });
    expect(result.responses).toHaveLength(1);
    const response = result.responses[0]!;
    if (response.apiKey !== DataPortApiKey.Fetch)
      throw new Error(`answered apiKey ${response.apiKey}`);
    const partition = response.body.partitions[0]!;
    expect(partition.errorCode).toBe('OFFSET_OUT_OF_RANGE');
    expect(partition.errorMessage).toMatch(/offset/i);
  });

  it('survives random bytes, cut frames and mutated bodies without hanging a connection', async () => {
    for (let round = 0; round < 200; round++) {
      const kind = random.below(4);
      let input: Buffer;
      let name: string;
      if (kind === 0) {
        input = random.bytes(1 + random.below(300));
        name = `${input.length} random bytes`;
      } else if (kind === 1) {
        const whole = wellFormedFetch(100 + round);
        input = whole.subarray(0, 1 + random.below(whole.length - 1));
        name = `a fetch cut to ${input.length} of ${whole.length} bytes`;
      } else if (kind === 2) {
        input = Buffer.from(wellFormedFetch(100 + round));
        const position = 4 + random.below(input.length - 4);
        input[position] = random.below(256);
        name = `a fetch with byte ${position} set to ${input[position]}`;
      } else {
        input = Buffer.from(encodeApiVersionsRequest(100 + round));
        const position = 4 + random.below(input.length - 4);
        input[position] = random.below(256);
        name = `an ApiVersions with byte ${position} set to ${input[position]}`;
      }
      // Half-closing tells the server no more bytes are coming, so a cut frame must end in a
      // close rather than a wait; a whole frame gets its answer first.
      const result = await exchange(input, { halfClose: true }).catch((error: Error) => {
        throw new Error(`${name}: ${error.message}`);
      });
      expect(result.closedByServer, `${name}: the connection hung`).toBe(true);
      for (const response of result.responses) {
        if (response.apiKey === dataPortErrorApiKey) {
          const body = response.body as { errorCode: string; errorMessage: string };
          expect(body.errorCode, name).toMatch(/^[A-Z][A-Z_]+$/);
          expect(body.errorMessage.length, name).toBeGreaterThan(0);
        }
      }
    }
  }, 120_000);

  it('keeps serving well-formed fetches, and the process is alive', async () => {
    expect(cluster.nodes.get(0)!.process.child.exitCode).toBeNull();
    const client = await cluster.dataClient(0);
    try {
      const versions = await client.apiVersions({ timeoutMs: 5_000 });
      expect(versions.apis.length).toBeGreaterThan(0);
      const fetched = await client.fetch(
        {
          replicaId: consumerReplicaId,
          brokerEpoch: -1n,
          maxWaitMs: 0,
          minBytes: 0,
          maxBytes: 1024 * 1024,
          partitions: [
            {
              topic,
              partition: 0,
              fetchOffset: 0n,
              currentLeaderEpoch: -1,
              logStartOffset: -1n,
              partitionMaxBytes: 1024 * 1024,
            },
          ],
        },
        { timeoutMs: 5_000 },
      );
      expect(fetched.partitions[0]!.errorCode).toBe('');
      expect(fetched.partitions[0]!.highWatermark).toBe(3n);
    } finally {
      await client.close();
    }
  });
});

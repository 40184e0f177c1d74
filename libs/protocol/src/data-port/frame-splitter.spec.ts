// Proves the frame splitter with fast-check: frames cut into chunks at random boundaries (down to
// one byte, the size field split across chunks) come out whole and in order; bytes not yet
// taken stay buffered and are counted; a sizeBytes over the bound or under the header throws a
// typed error as soon as the size field is complete, before the frame's bytes arrive.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ProtocolError, ProtocolErrorCode } from '../errors';
import { requestHeaderBytes, responseHeaderBytes } from './data-port-layout';
import { FrameSplitter } from './frame-splitter';
import { FrameWriter } from './frame-writer';

function frameOf(body: Uint8Array): Buffer {
  return new FrameWriter().u16(1).u16(0).u32(7).bytes(Buffer.from(body)).finish();
}

function chunked(stream: Buffer, cuts: number[]): Buffer[] {
  const positions = [...new Set(cuts.map((cut) => cut % (stream.length + 1)))].sort(
    (a, b) => a - b,
  );
  const chunks: Buffer[] = [];
  let start = 0;
  for (const position of [...positions, stream.length]) {
    chunks.push(stream.subarray(start, position));
    start = position;
  }
  return chunks;
}

describe('FrameSplitter', () => {
  it('reassembles frames cut at any boundaries, in order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 100 }), { minLength: 1, maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 40 }),
        (bodies, cuts) => {
          const frames = bodies.map(frameOf);
          const splitter = new FrameSplitter({
            direction: 'request',
            frameBytesMax: () => 1024,
            headerBytesMin: requestHeaderBytes,
          });
          const received: Buffer[] = [];
          for (const chunk of chunked(Buffer.concat(frames), cuts)) {
            splitter.push(chunk);
            for (let frame = splitter.next(); frame !== undefined; frame = splitter.next()) {
              received.push(frame);
            }
          }
          expect(received).toEqual(frames);
          expect(splitter.bufferedBytes).toBe(0);
        },
      ),
    );
  });

  it('keeps bytes it was not asked for, and counts them', () => {
    const splitter = new FrameSplitter({
      direction: 'request',
      frameBytesMax: () => 1024,
      headerBytesMin: requestHeaderBytes,
    });
    const first = frameOf(Buffer.from('one'));
    const second = frameOf(Buffer.from('second'));
    splitter.push(Buffer.concat([first, second, second.subarray(0, 5)]));
    expect(splitter.bufferedBytes).toBe(first.length + second.length + 5);
    expect(splitter.next()).toEqual(first);
    expect(splitter.bufferedBytes).toBe(second.length + 5);
    expect(splitter.next()).toEqual(second);
    expect(splitter.next()).toBeUndefined();
    expect(splitter.bufferedBytes).toBe(5);
    splitter.push(second.subarray(5));
    expect(splitter.next()).toEqual(second);
  });

  it('refuses an oversized frame from its size field alone, by direction', () => {
    const request = new FrameSplitter({
      direction: 'request',
      frameBytesMax: () => 100,
      headerBytesMin: requestHeaderBytes,
    });
    request.push(Buffer.from([0, 0, 0]));
    expect(request.next()).toBeUndefined();
    request.push(Buffer.from([97]));
    expect(() => request.next()).toThrow(
      new ProtocolError(
        ProtocolErrorCode.InvalidRequest,
        'A request frame of 101 bytes (sizeBytes 97 at byte 0) is over the bound of 100 bytes',
      ),
    );
    const response = new FrameSplitter({
      direction: 'response',
      frameBytesMax: () => 100,
      headerBytesMin: responseHeaderBytes,
    });
    response.push(Buffer.from([0xff, 0xff, 0xff, 0xff]));
    let thrown: unknown;
    try {
      response.next();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ProtocolError);
    expect((thrown as ProtocolError).code).toBe(ProtocolErrorCode.MessageTooLarge);
  });

  it('refuses a sizeBytes shorter than the header', () => {
    const splitter = new FrameSplitter({
      direction: 'request',
      frameBytesMax: () => 100,
      headerBytesMin: requestHeaderBytes,
    });
    splitter.push(Buffer.from([0, 0, 0, 3, 1, 2, 3]));
    expect(() => splitter.next()).toThrow(
      /sizeBytes at byte 0 is 3, shorter than its 8-byte header/,
    );
  });
});

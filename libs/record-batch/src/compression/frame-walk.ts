/**
 * The container LZ4 and zstd frames share: frames back to back, each starting with a 4-byte
 * little-endian magic number, with skippable frames (magic 0x184D2A5?, then a 4-byte size) that
 * carry no data. Both codecs bound decompression by walking it from headers alone.
 */
const skippableFrameMagicMask = 0xfffffff0;
const skippableFrameMagic = 0x184d2a50;

/** Throws when `sizeBytes` at `position` would run past the input. */
export function needBytes(
  format: string,
  buffer: Buffer,
  position: number,
  sizeBytes: number,
  what: string,
): void {
  if (position + sizeBytes > buffer.length) {
    throw new Error(`${format} frame: ${what} at byte ${position} is cut off`);
  }
}

/**
 * The most bytes `frames` can inflate to: the sum of what `walkFrame` bounds for each data frame
 * (called with the position after its magic). Throws on a foreign magic or a truncated input.
 */
export function framesInflationBoundBytes(
  format: string,
  frameMagic: number,
  frames: Buffer,
  walkFrame: (frames: Buffer, start: number) => { boundBytes: number; end: number },
): number {
  let boundBytes = 0;
  let position = 0;
  while (position < frames.length) {
    needBytes(format, frames, position, 4, 'the magic number');
    const magic = frames.readUInt32LE(position);
    if ((magic & skippableFrameMagicMask) >>> 0 === skippableFrameMagic) {
      needBytes(format, frames, position + 4, 4, 'a skippable frame size');
      position += 8 + frames.readUInt32LE(position + 4);
      continue;
    }
    if (magic !== frameMagic) {
      throw new Error(
        `${format} frame: magic 0x${magic.toString(16)} at byte ${position} is not ${format}'s`,
      );
    }
    const frame = walkFrame(frames, position + 4);
    boundBytes += frame.boundBytes;
    position = frame.end;
  }
  if (position !== frames.length)
    throw new Error(`${format} frame: a skippable frame overruns the input`);
  return boundBytes;
}

/**
 * Small text checkpoint files, in the shape of Kafka's `CheckpointFile`:
 *
 *   <version>\n
 *   <entry count>\n
 *   <entry>\n        one line per entry, fields separated by single spaces
 *
 * Crash story: a checkpoint is written to `<name>.tmp`, fsynced, renamed over `<name>`, and the
 * folder is fsynced, so after a crash the file holds either the old or the new content, never a
 * mix. A leftover `.tmp` is garbage from an interrupted write and is ignored (the log removes it
 * on open). A file that does not parse is reported, not trusted: its owner falls back to the
 * safe default (recover from the start, rebuild from the log).
 *
 * Calls are synchronous: checkpoints are rare (a flush interval, a leader change, a close) and a
 * few hundred bytes, and a synchronous write cannot interleave with another write of the same file.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export const checkpointVersion = 0;

export class CheckpointFormatError extends Error {
  override readonly name = 'CheckpointFormatError';
}

export function writeCheckpointFile(filePath: string, entries: readonly string[]): void {
  const temporaryPath = `${filePath}.tmp`;
  const text = `${checkpointVersion}\n${entries.length}\n${entries.map((entry) => `${entry}\n`).join('')}`;
  const fd = fs.openSync(temporaryPath, 'w');
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temporaryPath, filePath);
  fsyncDirectory(path.dirname(filePath));
}

/** The entries of a checkpoint, or undefined when there is no file. Throws on a malformed one. */
export function readCheckpointFile(filePath: string): string[] | undefined {
  let text: string;
  try {
    text = fs.readFileSync(filePath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const [version, count, ...entries] = lines;
  if (version !== String(checkpointVersion)) {
    throw new CheckpointFormatError(
      `${filePath}: unknown checkpoint version ${JSON.stringify(version)}`,
    );
  }
  if (count === undefined || !/^\d+$/.test(count) || Number(count) !== entries.length) {
    throw new CheckpointFormatError(
      `${filePath}: expected ${JSON.stringify(count)} entries, found ${entries.length}`,
    );
  }
  return entries;
}

/** Makes a rename or unlink in the folder durable. */
export function fsyncDirectory(directory: string): void {
  const fd = fs.openSync(directory, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * fsyncDirectory on the libuv pool: a folder's fsync waits for the file system's journal, which
 * can wait for megabytes of other files' data, so the append path never calls it synchronously.
 */
export async function fsyncDirectoryAsync(directory: string): Promise<void> {
  const handle = await fs.promises.open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Reads a checkpoint holding one offset; undefined when absent or unreadable. */
export function readOffsetCheckpoint(filePath: string): bigint | undefined {
  try {
    const entries = readCheckpointFile(filePath);
    if (entries === undefined || entries.length !== 1 || !/^-?\d+$/.test(entries[0]!))
      return undefined;
    return BigInt(entries[0]!);
  } catch (error) {
    if (error instanceof CheckpointFormatError) return undefined;
    throw error;
  }
}

export function writeOffsetCheckpoint(filePath: string, offset: bigint): void {
  writeCheckpointFile(filePath, [offset.toString()]);
}

/**
 * A checkpoint of one offset per partition (`<topic> <partition> <offset>`), by folder name;
 * empty without a file. A malformed one is reported in `problems` (with `fallback`, what that
 * means) and read as empty.
 */
export function readPartitionOffsets(
  checkpointPath: string,
  problems: string[],
  fallback: string,
): Map<string, bigint> {
  const offsets = new Map<string, bigint>();
  try {
    for (const entry of readCheckpointFile(checkpointPath) ?? []) {
      const match = /^(\S+) (\d+) (\d+)$/.exec(entry);
      if (match === null) {
        throw new CheckpointFormatError(`${checkpointPath}: bad entry ${JSON.stringify(entry)}`);
      }
      offsets.set(`${match[1]}-${match[2]}`, BigInt(match[3]!));
    }
  } catch (error) {
    if (!(error instanceof CheckpointFormatError)) throw error;
    problems.push(`${error.message}; ${fallback}`);
    offsets.clear();
  }
  return offsets;
}

/** The entries of a per-partition checkpoint, from offsets by folder name (`<topic>-<partition>`). */
export function partitionOffsetEntries(offsets: ReadonlyMap<string, bigint>): string[] {
  const entries: string[] = [];
  for (const [folder, offset] of offsets) {
    const match = /^(.+)-(\d+)$/.exec(folder);
    if (match !== null) entries.push(`${match[1]} ${match[2]} ${offset}`);
  }
  return entries;
}

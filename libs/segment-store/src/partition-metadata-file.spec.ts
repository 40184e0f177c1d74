// Proves partition.metadata's round trip in Kafka's format, that an unchanged id is not
// rewritten, and that a missing or foreign file reads as "no id" rather than failing.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { partitionMetadataFile } from './log-files';
import { readPartitionTopicId, writePartitionTopicId } from './partition-metadata-file';
import { temporaryDirectory } from './testing';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function folder(): string {
  const made = temporaryDirectory('spool-partition-metadata-');
  cleanups.push(made.remove);
  return made.directory;
}

describe('partition.metadata', () => {
  it("writes Kafka's format and reads the id back", () => {
    const directory = folder();
    expect(readPartitionTopicId(directory)).toBe('');
    writePartitionTopicId(directory, 'q1Lm3BNpRSyNTkbxXf7sJw');
    const file = path.join(directory, partitionMetadataFile);
    expect(fs.readFileSync(file, 'utf8')).toBe('version: 0\ntopic_id: q1Lm3BNpRSyNTkbxXf7sJw\n');
    expect(readPartitionTopicId(directory)).toBe('q1Lm3BNpRSyNTkbxXf7sJw');
    expect(fs.existsSync(`${file}.tmp`)).toBe(false);
  });

  it('does not rewrite an unchanged id, and replaces a different one', () => {
    const directory = folder();
    const file = path.join(directory, partitionMetadataFile);
    writePartitionTopicId(directory, 'first');
    const writtenAt = fs.statSync(file).ino;
    writePartitionTopicId(directory, 'first');
    expect(fs.statSync(file).ino).toBe(writtenAt);
    writePartitionTopicId(directory, 'second');
    expect(readPartitionTopicId(directory)).toBe('second');
  });

  it('reads a file without a topic_id line as no id', () => {
    const directory = folder();
    fs.writeFileSync(path.join(directory, partitionMetadataFile), 'version: 0\n');
    expect(readPartitionTopicId(directory)).toBe('');
  });
});

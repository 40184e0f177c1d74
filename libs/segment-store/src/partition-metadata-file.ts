/**
 * `partition.metadata` in a partition log's folder (Kafka's `PartitionMetadataFile`): the id of
 * the topic the log belongs to, so that a log left by a deleted topic is not adopted by a new
 * topic of the same name.
 *
 *   version: 0
 *   topic_id: <id>
 *
 * Crash story: written to `partition.metadata.tmp` and renamed over the file, so it is whole or
 * absent, never torn. It is not fsynced: a new partition's hosting path pays no fsync for it
 * (20,000 of them at topic creation), and a file lost to an OS crash reads as "no id", which the
 * storage node treats as its current topic's log and writes again (as Kafka treats a log from a
 * version without topic ids). A leftover `.tmp` is removed when the log opens (log-loader.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { partitionMetadataFile } from './log-files';

/**
 * The topic id in `directory`'s partition.metadata; '' when there is no readable one (a missing
 * or unreadable file only means the id is written again, see the crash story).
 */
export function readPartitionTopicId(directory: string): string {
  try {
    const text = fs.readFileSync(path.join(directory, partitionMetadataFile), 'utf8');
    return /^topic_id: (\S+)$/m.exec(text)?.[1] ?? '';
  } catch {
    return '';
  }
}

/** Records `topicId` as the topic of the log in `directory`, unless it already is. */
export function writePartitionTopicId(directory: string, topicId: string): void {
  if (readPartitionTopicId(directory) === topicId) return;
  const file = path.join(directory, partitionMetadataFile);
  fs.writeFileSync(`${file}.tmp`, `version: 0\ntopic_id: ${topicId}\n`);
  fs.renameSync(`${file}.tmp`, file);
}

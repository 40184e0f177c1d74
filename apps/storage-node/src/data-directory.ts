/**
 * A storage node's data directory: one folder per hosted replica, named `<topic>-<partition>`
 * as in Kafka, and a lock so that two processes never share it (a second one is refused at
 * start-up, before it can open a single log).
 *
 *   <dataDir>/.lock                   owner pid (ProcessLock)
 *   <dataDir>/<topic>-<partition>/    the partition's log (see @spool/segment-store)
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ProcessLock, SpoolError } from '@spool/common';

export interface PartitionFolder {
  readonly topic: string;
  readonly partition: number;
  readonly directory: string;
}

export class DataDirectory {
  private constructor(
    readonly root: string,
    private readonly lock: ProcessLock,
  ) {}

  static open(root: string): DataDirectory {
    fs.mkdirSync(root, { recursive: true });
    const lock = ProcessLock.acquire(path.join(root, '.lock'), (ownerPid, reason) => {
      const owner = ownerPid === undefined ? '' : ` by process ${ownerPid}`;
      return new SpoolError(
        'DATA_DIRECTORY_LOCKED',
        `data directory ${root} is in use${owner}: ${reason}`,
      );
    });
    return new DataDirectory(root, lock);
  }

  partitionDirectory(topic: string, partition: number): string {
    return path.join(this.root, `${topic}-${partition}`);
  }

  /** Every partition folder on disk (topic names may contain '-', the partition is the last part). */
  listPartitionFolders(): PartitionFolder[] {
    const folders: PartitionFolder[] = [];
    for (const entry of fs.readdirSync(this.root, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const match = /^(.+)-(\d+)$/.exec(entry.name);
      if (match === null) continue;
      folders.push({
        topic: match[1]!,
        partition: Number(match[2]),
        directory: path.join(this.root, entry.name),
      });
    }
    return folders;
  }

  /** Bytes free on the file system that holds the directory. */
  freeBytes(): number {
    const stats = fs.statfsSync(this.root);
    return stats.bavail * stats.bsize;
  }

  totalBytes(): number {
    const stats = fs.statfsSync(this.root);
    return stats.blocks * stats.bsize;
  }

  release(): void {
    this.lock.release();
  }
}

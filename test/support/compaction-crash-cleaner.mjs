// The child process of compaction-crash.spec.ts: opens the compacted log the parent wrote, runs
// one log cleaner pass over it, and dies by SIGKILL inside the pass's swap at the step that the
// environment variable SPOOL_TEST_CLEANER_SWAP_CRASH_STEP names (cleaner/segment-swap.ts). Plain
// JavaScript so that `node` runs it without a build step; `@spool/*` resolve to the built dist.
//
//   node compaction-crash-cleaner.mjs <data directory> <log folder name> <log config as JSON>
//
// It writes one line on stdout once the log is open, and exits 0 only if the pass ran to its end
// (a step past the last, or none): the parent expects the kill.
import * as path from 'node:path';
import segmentStore from '@spool/segment-store';

const { CleanerCheckpoint, Log, LogCleaner } = segmentStore;

const [root, folder, configText] = process.argv.slice(2);
if (root === undefined || folder === undefined || configText === undefined) {
  process.stderr.write('usage: compaction-crash-cleaner.mjs <root> <folder> <config JSON>\n');
  process.exit(2);
}
const { log } = await Log.open(path.join(root, folder), { config: JSON.parse(configText) });
process.stdout.write(
  `${JSON.stringify({ event: 'opened', logEndOffset: String(log.logEndOffset) })}\n`,
);
log.updateHighWatermark(log.logEndOffset);
const cleaner = new LogCleaner();
const result = await cleaner.cleanFilthiest([{ log, checkpoint: CleanerCheckpoint.load(root) }]);
process.stdout.write(`${JSON.stringify({ event: 'cleaned', removed: result?.recordsRemoved })}\n`);
await cleaner.close();
await log.close();

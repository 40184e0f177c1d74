// `npm run faults -- [--minutes N] [--seed S] [--kinds K,...] [--targets ROLE,...]
// [--concurrency N] [--json]`: a long fault run through the same spec as the short profile of
// `npm test` (test/faults/faults.spec.ts, told the length by SPOOL_FAULTS_MINUTES); --kinds (kill,
// pause, partition, disk-full, slow-disk) and --targets (etcd, controller, storage-node,
// coordinator, gateway) narrow the nemesis to one class of fault, --concurrency sets how many
// faults run at once (two etcd members out at once leave no quorum). vitest's output goes to
// stderr as it happens; at the end the summary table goes to stdout and, with --json, the checker's counts as the last line, one JSON object.
// Exits with vitest's status: non-zero when any correctness count is not 0.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    seed: { type: 'string' },
    // Narrow the nemesis to these fault kinds and member roles (comma-separated).
    kinds: { type: 'string' },
    targets: { type: 'string' },
    // Faults in progress at once (the long profile's 2 unless set).
    concurrency: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
  strict: true,
});
const minutes = Number(values.minutes);
if (!Number.isFinite(minutes) || minutes <= 0 || minutes > 24 * 60) {
  process.stderr.write(
    `faults: --minutes must be a number from 0 to 1440, got "${values.minutes}"\n`,
  );
  process.exit(2);
}
const root = path.resolve(import.meta.dirname, '../..');
const summaryPath = path.join(
  mkdtempSync(path.join(tmpdir(), 'spool-faults-summary-')),
  'summary.txt',
);
const child = spawn(
  process.execPath,
  [
    path.join(root, 'node_modules/vitest/vitest.mjs'),
    'run',
    '--config',
    path.join(root, 'test/vitest.config.mts'),
    'faults/faults.spec.ts',
  ],
  {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      ...process.env,
      SPOOL_FAULTS_MINUTES: String(minutes),
      SPOOL_FAULTS_SUMMARY_PATH: summaryPath,
      ...(values.seed === undefined ? {} : { SPOOL_FAULTS_SEED: values.seed }),
      ...(values.kinds === undefined ? {} : { SPOOL_FAULTS_KINDS: values.kinds }),
      ...(values.targets === undefined ? {} : { SPOOL_FAULTS_TARGETS: values.targets }),
      ...(values.concurrency === undefined ? {} : { SPOOL_FAULTS_CONCURRENCY: values.concurrency }),
    },
  },
);
child.stdout.pipe(process.stderr);
child.on('exit', (code, signal) => {
  if (existsSync(summaryPath)) {
    const lines = readFileSync(summaryPath, 'utf8').trimEnd().split('\n');
    const json = lines.pop();
    process.stdout.write(`${lines.join('\n')}\n`);
    if (values.json) process.stdout.write(`${json}\n`);
  } else {
    process.stderr.write('faults: the run ended without a summary (see the output above)\n');
  }
  process.exit(code ?? (signal === null ? 1 : 1));
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => child.kill(signal));
}

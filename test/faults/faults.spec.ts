// Proves that nothing acknowledged is lost, duplicated or reordered, that replicas never diverge
// below the high watermark and that the consumer gets every acknowledged record, while a seeded
// nemesis kills, pauses, partitions, fills and slows the members of a real cluster (3-member
// etcd, 2 controllers, 3 storage nodes, coordinators, 2 gateways, each in its own network
// namespace). The short profile runs inside `npm test`; `npm run faults -- --minutes N` runs a
// long one through this same file (SPOOL_FAULTS_MINUTES; SPOOL_FAULTS_KINDS, _TARGETS and
// _CONCURRENCY narrow the nemesis). The seed is printed first; SPOOL_FAULTS_SEED replays it.
import { writeFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { formatSummary, longProfile, nemesisFilter, runFaults, shortProfile } from './fault-run';
import { faultKinds } from './history';
import { faultSeed } from '../support/seeded-random';

const minutes = Number(process.env['SPOOL_FAULTS_MINUTES'] ?? '0');
const baseProfile = minutes > 0 ? longProfile(minutes) : shortProfile;
const filter = nemesisFilter(
  process.env['SPOOL_FAULTS_KINDS'],
  process.env['SPOOL_FAULTS_TARGETS'],
  process.env['SPOOL_FAULTS_CONCURRENCY'],
);
const profile = { ...baseProfile, nemesis: { ...baseProfile.nemesis, ...filter } };
/** Start-up, recovery, catch-up, final read and teardown, on top of the fault window. */
const overheadMs = 5 * 60_000;

it(
  `keeps every acknowledged record through ${Math.round(profile.faultMs / 1000)} s of faults`,
  async () => {
    const seed = faultSeed();
    const summary = await runFaults(profile, seed, (line) => process.stdout.write(`${line}\n`));
    const text = formatSummary(summary);
    process.stdout.write(`${text}\n`);
    const summaryPath = process.env['SPOOL_FAULTS_SUMMARY_PATH'];
    if (summaryPath !== undefined) writeFileSync(summaryPath, `${text}\n`);

    expect(summary.acknowledged).toBeGreaterThan(100);
    expect(summary.faults).toMatchObject({
      kill: expect.any(Number),
      pause: expect.any(Number),
    });
    // Disk faults strike storage nodes only: a run narrowed to other roles has none.
    const diskFaultsPossible = profile.nemesis.targetRoles?.includes('storage-node') ?? true;
    for (const kind of profile.nemesis.kinds ?? faultKinds) {
      if ((kind === 'disk-full' || kind === 'slow-disk') && !diskFaultsPossible) continue;
      expect(summary.faults[kind], kind).toBeGreaterThan(0);
    }
    expect({
      lost: summary.lost,
      reordered: summary.reordered,
      diverged: summary.diverged,
      undelivered: summary.undelivered,
      offsetsBackwards: summary.offsetsBackwards,
      // Without idempotence a retried send may land twice; with it, never.
      duplicated: profile.idempotent ? summary.duplicated : 0,
      crashes: summary.crashes,
    }).toEqual({
      crashes: [],
      lost: 0,
      reordered: 0,
      diverged: 0,
      undelivered: 0,
      offsetsBackwards: 0,
      duplicated: 0,
    });
  },
  profile.faultMs + overheadMs,
);

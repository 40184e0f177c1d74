// Proves the `spool` command's interpreter line carries exactly the V8 flags `spool dev` gives the
// services, so a container's service (started through bin/spool.mjs) runs as the benchmarks did.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { spoolNodeFlags } from './node-flags';

describe('spoolNodeFlags', () => {
  it('are the flags of bin/spool.mjs, the image entrypoint', () => {
    const launcher = readFileSync(path.join(__dirname, '..', 'bin', 'spool.mjs'), 'utf8');
    expect(launcher.split('\n')[0]).toBe(`#!/usr/bin/env -S node ${spoolNodeFlags.join(' ')}`);
  });

  it('are accepted by this node, which refuses a flag it does not know', () => {
    const run = (flags: readonly string[]) =>
      spawnSync(process.execPath, [...flags, '-e', 'process.exit(0)'], { encoding: 'utf8' });
    const accepted = run(spoolNodeFlags);
    expect(accepted.stderr).toBe('');
    expect(accepted.status).toBe(0);
    expect(run(['--no-such-v8-flag-for-spool']).status).not.toBe(0);
  });
});

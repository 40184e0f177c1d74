/**
 * The V8 flags every Spool process runs with: `spool dev` passes them to the services it starts,
 * and bin/spool.mjs (the `spool` command, the image's entrypoint) carries the same ones in its
 * `#!/usr/bin/env -S node …` line, so a container runs its service with them as PID 1. NODE_OPTIONS
 * cannot carry them (V8 flags outside Node's short list are refused there).
 *
 * --initial-old-space-size: the data path moves megabyte buffers (a produce request in, the
 * same batch out to the leader), and each counts against V8's old-generation limit while it
 * lives. With V8's default limit for a heap of ~13 MB live, the gateway ran a full mark-compact
 * every five or six 1 MiB produce requests, 30 % of its CPU; starting the limit at 64 MB cut the
 * collections about 2.5 times and the gateway's CPU per GB by 25–40 % (issue 11's profile), at
 * the cost of up to ~64 MB of garbage held between collections (peak RSS stayed under 170 MB).
 */
export const spoolNodeFlags = ['--initial-old-space-size=64'] as const;

/**
 * The V8 flags every Spool process runs with: `spool dev` passes them to the services it starts,
 * and bin/spool.mjs (the `spool` command, the image's entrypoint) carries the same ones in its
 * `#!/usr/bin/env -S node …` line, so a container runs its service with them as PID 1, and the
 * benchmarks' client runs with them too. NODE_OPTIONS cannot carry them (V8 flags outside Node's
 * short list are refused there).
 *
 * --initial-old-space-size: the data path moves megabyte buffers (a produce request in, the
 * same batch out to the leader), and each counts against V8's old-generation limit while it
 * lives. With V8's default limit for a heap of ~13 MB live, the gateway ran a full mark-compact
 * every five or six 1 MiB produce requests, 30 % of its CPU; starting the limit at 64 MB cut the
 * collections about 2.5 times and the gateway's CPU per GB by 25–40 % (issue 11's profile), at
 * the cost of up to ~64 MB of garbage held between collections (peak RSS stayed under 170 MB).
 *
 * --single-threaded-gc: otherwise V8 gives each process helper threads for its collector
 * (concurrent marking, parallel scavenging, concurrent sweeping). Spool runs several processes
 * per machine (`spool dev` runs six on one; a Kubernetes node packs pods under CPU limits), and
 * every helper is one more runnable thread that takes a core from some process's main thread
 * just when that thread has a request to pass on. A produce with acks=all crosses five processes
 * and waits for each. With the collector's work done on the main thread instead, in that
 * process's own pauses, issue 11's scenario 6 (end-to-end at 520 k records/s, 2 cores) went from
 * an e2e p99 of 20–28 ms to 12–17 ms (bench/README.md, item 21).
 *
 * --no-allocation-site-pretenuring: V8 watches which allocation sites' objects survive young
 * collections and, past a threshold, allocates everything from those sites straight into old
 * space. A burst of late acknowledgements (a stall during warm-up) was enough to flip the
 * producer's per-record result objects there, for good: the benchmark's producing thread then ran
 * a mark-compact every 0.75 s instead of twice in 20 s. Spool's hot paths allocate per request
 * and per record, and nearly all of it dies within milliseconds; what lives long (logs, indexes,
 * sessions) is allocated once, so a copy through the young generation costs it little.
 */
export const spoolNodeFlags = [
  '--initial-old-space-size=64',
  '--single-threaded-gc',
  '--no-allocation-site-pretenuring',
] as const;

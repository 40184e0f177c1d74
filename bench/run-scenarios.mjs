#!/usr/bin/env node
// `npm run bench [-- --quick] [-- --scale F] [-- --only 2,3]`: Spool's standard benchmark scenarios (issue 11),
// each group on a fresh `spool dev` cluster, with figures written to bench/results/<date>.json,
// a markdown table (<date>.md) and an SVG chart (<date>.svg). Benchmarks print figures; nothing
// here passes or fails on them.
//
//   1. segment-store append vs raw sequential write of the same bytes (npx nx run segment-store:bench)
//   2. 1 storage node, replication factor 1, acks=1, 100-byte records (16 KiB and 1 MiB batches)
//   3. 3 storage nodes, replication factor 3, acks=all, 100-byte records
//   4. the same with 1 KiB records, and with 1 KiB records and zstd
//   5. consume N records from the beginning (10 million; fewer with --quick)
//   6. end-to-end latency at half of the maximum throughput measured in 3, on a cluster of its own
//   7. read-by-offset latency at a small and a large log
//   partitions: `spool bench partitions` (issue 20), only when named: `--only partitions`, as it
//      grows its own cluster to 20,000 partitions (--quick: 300) for many minutes
//
// Besides each scenario's figures: the CPU seconds every service process used during it (from
// /proc/<pid>/stat), hence CPU seconds per GB on the storage node and gateway, and the peak RSS
// of every service process (VmHWM in /proc/<pid>/status) per cluster.
//
// Needs a build first (`npx nx run-many -t build`). Linux only (/proc).
import { spawn, execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = path.join(root, 'apps', 'cli', 'dist', 'main.js');
const resultsDirectory = path.join(root, 'bench', 'results');
const clockTicksPerSecond = 100; // Linux's USER_HZ, what /proc/<pid>/stat counts in.
const gigabyte = 1024 ** 3;
// The V8 flags the `spool` command runs with (apps/cli/src/node-flags.ts): the bench client and
// `spool dev` run as a user's `spool` would.
const { spoolNodeFlags } = await import(
  pathToFileURL(path.join(root, 'apps', 'cli', 'dist', 'node-flags.js')).href
);

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const onlyIndex = argv.indexOf('--only');
/** --only 2,3,partitions: numbered scenarios as numbers, named ones as their names. */
const only =
  onlyIndex >= 0
    ? new Set(
        argv[onlyIndex + 1].split(',').map((item) => (/^\d+$/.test(item) ? Number(item) : item)),
      )
    : undefined;
const scaleIndex = argv.indexOf('--scale');
/** --scale F: every record count times F (e.g. --quick --scale 5 for a medium run). */
const scale = scaleIndex >= 0 ? Number(argv[scaleIndex + 1]) : 1;
const gatewayPort = 19290 + Math.floor(Math.random() * 500);

/** Record counts: the full run, and --quick for a smoke run of a minute or two. */
const counts = quick
  ? {
      s2: 50_000,
      s3: 30_000,
      s4: 10_000,
      s5: 200_000,
      s6Seconds: 3,
      s6WarmupSeconds: 1,
      s7Small: 5_000,
      reads: 50,
    }
  : {
      s2: 2_000_000,
      s3: 1_000_000,
      s4: 300_000,
      s5: 10_000_000,
      s6Seconds: 20,
      s6WarmupSeconds: 5,
      s7Small: 10_000,
      reads: 1_000,
    };

for (const key of Object.keys(counts)) counts[key] = Math.max(1, Math.round(counts[key] * scale));
const wanted = (scenario) => only === undefined || only.has(scenario);
/** The partitions scenario runs only when --only names it (see the header). */
const partitionsWanted = only !== undefined && only.has('partitions');

function log(line) {
  process.stderr.write(`[bench] ${line}\n`);
}

/** Runs a command, streams its stderr (progress lines), resolves with its stdout. */
function run(command, args, options = {}) {
  return new Promise((resolve, reject) => {
    const child = execFile(
      command,
      args,
      { maxBuffer: 64 * 1024 * 1024, ...options },
      (error, stdout) =>
        error
          ? reject(new Error(`${command} ${args.join(' ')} failed: ${error.message}`))
          : resolve(stdout),
    );
    child.stderr.on('data', (chunk) => process.stderr.write(chunk));
  });
}

/** The last line that is a JSON object (nx prints its summary after the command's output). */
function lastJsonLine(stdout) {
  const lines = stdout.trim().split('\n').reverse();
  const line = lines.find((candidate) => candidate.trimStart().startsWith('{'));
  if (line === undefined) throw new Error(`no JSON line in:\n${stdout.slice(-2_000)}`);
  return JSON.parse(line);
}

function procStat(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicksPerSecond;
}

function peakRssMb(pid) {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('VmHWM:'));
  return Math.round(Number(line.split(/\s+/)[1]) / 1024);
}

/** A fresh `spool dev` cluster in a temporary folder; stop() ends it and removes the folder. */
async function startCluster(nodes) {
  const dataDirectory = mkdtempSync(path.join(tmpdir(), 'spool-bench-'));
  const child = spawn(
    process.execPath,
    [
      ...spoolNodeFlags,
      cli,
      'dev',
      '--nodes',
      String(nodes),
      '--data-dir',
      dataDirectory,
      '--gateway-port',
      String(gatewayPort),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  // The cluster's logs are read all along (a full pipe would stall it); the last 64 KiB are kept
  // for the error message if start-up fails.
  let output = '';
  const keep = (chunk) => (output = (output + chunk).slice(-65_536));
  child.stderr.on('data', keep);
  await new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`spool dev did not start:\n${output}`)),
      60_000,
    );
    child.stdout.on('data', (chunk) => {
      keep(chunk);
      if (output.includes('processes ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`spool dev exited (${code}):\n${output}`)));
  });
  const description = JSON.parse(readFileSync(path.join(dataDirectory, 'cluster.json'), 'utf8'));
  const processes = description.processes.map(({ role, id, pid }) => ({
    name: role === 'storage-node' ? `storage-node-${id}` : role,
    role,
    pid,
  }));
  return {
    nodes,
    processes,
    cpuSeconds: () =>
      Object.fromEntries(processes.map((entry) => [entry.name, procStat(entry.pid)])),
    peakRssMb: () =>
      Object.fromEntries(processes.map((entry) => [entry.name, peakRssMb(entry.pid)])),
    async stop() {
      child.removeAllListeners('exit');
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGINT');
      await exited;
      rmSync(dataDirectory, { recursive: true, force: true });
    },
  };
}

function spool(args) {
  return run(process.execPath, [
    ...spoolNodeFlags,
    cli,
    ...args,
    '--gateway',
    `localhost:${gatewayPort}`,
    '--json',
  ]);
}

/** Runs one bench command; returns its result with the CPU each service used meanwhile. */
async function measure(cluster, scenario, label, args) {
  log(`scenario ${scenario}: ${label}`);
  const before = cluster.cpuSeconds();
  const result = lastJsonLine(await spool(['bench', ...args]));
  const after = cluster.cpuSeconds();
  const cpuSeconds = Object.fromEntries(
    Object.keys(after).map((name) => [name, Math.round((after[name] - before[name]) * 100) / 100]),
  );
  const storageCpuSeconds = Object.entries(cpuSeconds)
    .filter(([name]) => name.startsWith('storage-node'))
    .reduce((sum, [, seconds]) => sum + seconds, 0);
  const gigabytes = result.bytes / gigabyte;
  // Per GB only where the bytes are the work (produce, consume); a seek reads one record.
  const perGb = (seconds) =>
    result.mode === 'produce' || result.mode === 'consume'
      ? Math.round((seconds / gigabytes) * 10) / 10
      : null;
  return {
    scenario,
    label,
    ...result,
    cpuSeconds,
    storageCpuSecondsPerGb: perGb(storageCpuSeconds),
    gatewayCpuSecondsPerGb: perGb(cpuSeconds.gateway),
  };
}

const produce = (topic, records, extra) => [
  'produce',
  '--topic',
  topic,
  '--records',
  String(records),
  ...extra,
];

async function scenarioOne() {
  log('scenario 1: segment-store append vs raw sequential write');
  const args = ['nx', 'run', 'segment-store:bench', '--output-style=static', '--', '--json'];
  if (quick) args.push('--quick');
  else args.push('--large-log-gib', '1');
  const result = lastJsonLine(await run('npx', args, { cwd: root }));
  return { scenario: 1, label: 'segment-store append vs raw write', segmentStore: result };
}

async function singleNodeGroup(results, memory) {
  const cluster = await startCluster(1);
  try {
    if (wanted(2)) {
      // Broker cost per GB at two batch sizes: it must not grow with the records per batch.
      for (const [batchLabel, batchBytes] of [
        ['16 KiB', 16_384],
        ['1 MiB', 1_048_576],
      ]) {
        const topic = `s2-${batchBytes}`;
        results.push(
          await measure(
            cluster,
            2,
            `RF1 acks=1 100 B, ${batchLabel} batches`,
            produce(topic, counts.s2, [
              '--partitions',
              '1',
              '--replication-factor',
              '1',
              '--acks',
              '1',
              '--record-size',
              '100',
              '--batch-size',
              String(batchBytes),
              '--linger-ms',
              '5',
            ]),
          ),
        );
      }
    }
    if (wanted(5) || wanted(7)) {
      log(`scenarios 5 and 7: writing ${counts.s5} records to read back`);
      await spool([
        'bench',
        ...produce('s5', counts.s5, [
          '--partitions',
          '1',
          '--replication-factor',
          '1',
          '--acks',
          '1',
          '--batch-size',
          '1048576',
        ]),
      ]);
    }
    if (wanted(5)) {
      results.push(
        await measure(cluster, 5, `consume ${counts.s5} records from the beginning`, [
          'consume',
          '--topic',
          's5',
          '--records',
          String(counts.s5),
          '--from-beginning',
        ]),
      );
    }
    if (wanted(7)) {
      await spool([
        'bench',
        ...produce('s7-small', counts.s7Small, [
          '--partitions',
          '1',
          '--replication-factor',
          '1',
          '--acks',
          '1',
        ]),
      ]);
      for (const [label, topic, records] of [
        ['small', 's7-small', counts.s7Small],
        ['large', 's5', counts.s5],
      ]) {
        results.push(
          await measure(cluster, 7, `read by offset, ${label} log (${records} records)`, [
            'seek',
            '--topic',
            topic,
            '--reads',
            String(counts.reads),
          ]),
        );
      }
    }
  } finally {
    memory.push({ cluster: '1 storage node', peakRssMb: cluster.peakRssMb() });
    await cluster.stop();
  }
}

async function threeNodeGroup(results, memory) {
  const cluster = await startCluster(3);
  try {
    const replicated = ['--partitions', '1', '--replication-factor', '3', '--acks', 'all'];
    let maximum;
    if (wanted(3) || wanted(6)) {
      maximum = await measure(
        cluster,
        3,
        'RF3 acks=all 100 B',
        produce('s3', counts.s3, [
          ...replicated,
          '--record-size',
          '100',
          '--batch-size',
          '1048576',
        ]),
      );
      if (wanted(3)) results.push(maximum);
    }
    if (wanted(4)) {
      for (const [label, extra] of [
        ['1 KiB', []],
        ['1 KiB zstd', ['--compression', 'zstd']],
      ]) {
        results.push(
          await measure(
            cluster,
            4,
            `RF3 acks=all ${label}`,
            produce(`s4-${extra.length}`, counts.s4, [
              ...replicated,
              '--record-size',
              '1024',
              '--batch-size',
              '1048576',
              ...extra,
            ]),
          ),
        );
      }
    }
    return maximum;
  } finally {
    memory.push({ cluster: '3 storage nodes', peakRssMb: cluster.peakRssMb() });
    await cluster.stop();
  }
}

/**
 * Scenario 6 on a cluster of its own: its latency is the steady state of one workload, not the
 * tail of scenarios 3 and 4 (their topics on every fetch, their data still being written out).
 */
async function endToEndGroup(maximum, results, memory) {
  const cluster = await startCluster(3);
  try {
    const rate = Math.max(1, Math.floor(maximum.recordsPerSec / 2));
    results.push(
      await measure(cluster, 6, `end to end at ${rate} records/s (half of 3)`, [
        'e2e',
        '--topic',
        's6',
        '--partitions',
        '1',
        '--replication-factor',
        '3',
        '--acks',
        'all',
        '--throughput',
        String(rate),
        '--records',
        String(rate * counts.s6Seconds),
        // As the OpenMessaging benchmark: a warm-up at the same rate, consumed and not measured,
        // so the figures are the steady state and not the first second of a new topic.
        '--warmup-seconds',
        String(counts.s6WarmupSeconds),
        '--linger-ms',
        '1',
        // The producer of scenario 3, whose maximum sets the rate: with 16 KiB batches and 5
        // requests in flight, one partition cannot carry that rate through acks=all round
        // trips at all, and the run measured the producer's queue. The size is a bound, not a
        // wait: a batch leaves after linger.ms, as large as the records that came meanwhile.
        '--batch-size',
        '1048576',
      ]),
    );
  } finally {
    memory.push({ cluster: '3 storage nodes (scenario 6)', peakRssMb: cluster.peakRssMb() });
    await cluster.stop();
  }
}

/**
 * `spool bench partitions` with its own cluster; the full sizes are the command's defaults
 * (creates of 1,000 and 10,000, idle at 2,000 and 20,000, RF3 on 3 nodes).
 */
async function partitionsScenario() {
  log('scenario partitions: spool bench partitions (its own spool dev cluster)');
  const sizes = quick
    ? ['--create', '100', '--partitions', '300', '--idle-seconds', '5', '--settle-seconds', '2']
    : [];
  // Exit code 1 still prints the figures measured before the step that failed, and names it.
  const stdout = await new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      [...spoolNodeFlags, cli, 'bench', 'partitions', ...sizes, '--json'],
      { maxBuffer: 64 * 1024 * 1024 },
      (error, output) =>
        error && error.code !== 1
          ? reject(new Error(`spool bench partitions failed: ${error.message}`))
          : resolve(output),
    );
    child.stderr.on('data', (chunk) => process.stderr.write(chunk));
  });
  return lastJsonLine(stdout);
}

function partitionsMarkdown(result) {
  const seconds = (milliseconds) => (milliseconds / 1000).toFixed(2);
  const lines = [
    '',
    `## Partition scale (RF${result.settings.replicationFactor} on ${result.settings.nodes} storage nodes)`,
    '',
    '| create partitions | topics | on top of | call s | all led s | all in sync s |',
    '|---|---|---|---|---|---|',
    ...result.create.map(
      (create) =>
        `| ${create.partitions} | ${create.topics} | ${create.existingPartitions} | ` +
        `${seconds(create.createMs)} | ${seconds(create.leadersMs)} | ${seconds(create.inSyncMs)} |`,
    ),
  ];
  for (const idle of result.idle) {
    lines.push(
      '',
      `Idle at ${idle.partitions} partitions, CPU over ${idle.windowSeconds} s: the cluster ` +
        `${idle.clusterCpuPercent} % of one core.`,
      '',
      '| process | CPU % | RSS MB | open fds | log files open / max |',
      '|---|---|---|---|---|',
    );
    const files = new Map(idle.storageNodes.map((node) => [node.name, node]));
    for (const process of [...idle.processes, idle.supervisor]) {
      const node = files.get(process.name);
      lines.push(
        `| ${process.name} | ${process.cpuPercent} | ${process.rssMb} | ` +
          `${node?.openDescriptors ?? ''} | ${node === undefined ? '' : `${node.logOpenFiles} / ${node.logOpenFilesMax}`} |`,
      );
    }
  }
  const { failover, startup } = result;
  if (failover !== null) {
    lines.push(
      '',
      `Failover at ${failover.partitions} partitions: kill -9 of storage-node-${failover.brokerId}, ` +
        `leader of ${failover.partitionsLed}; ${failover.partitionsMoved} with a new leader, ` +
        `p50 ${seconds(failover.p50Ms)} s, p99 ${seconds(failover.p99Ms)} s, max ${seconds(failover.maxMs)} s.`,
    );
  }
  if (startup !== null) {
    lines.push(
      '',
      `Start-up at ${startup.partitions} partitions: the whole cluster in sync after ` +
        `${seconds(startup.clusterInSyncMs)} s; logs opened in ` +
        startup.nodes
          .map(
            (node) =>
              `${seconds(node.durationMs)} s (storage-node-${node.brokerId}, ` +
              `${node.cleanShutdown ? 'clean' : `crash, ${node.logsRecovered} recovered`})`,
          )
          .join(', ') +
        '.',
    );
    for (const restart of [startup.afterCleanStop, startup.afterKill]) {
      if (restart === null) continue;
      lines.push(
        '',
        `storage-node-${restart.brokerId} after ${restart.signal}: serving ${seconds(restart.startedMs)} s ` +
          `after its start, in sync after ${seconds(restart.inSyncMs)} s.`,
      );
    }
  }
  for (const error of result.errors) lines.push('', `Error: ${error}`);
  return lines;
}

function markdown(report) {
  const lines = [
    `# Spool benchmark ${report.startedAt}${report.quick ? ' (quick)' : ''}`,
    '',
    `Machine: ${report.machine}. Figures from one run on a shared machine; compare runs, not absolutes.`,
    '',
    '| # | scenario | records/s | MB/s | avg ms | p50 ms | p95 ms | p99 ms | p99.9 ms | max ms | storage CPU s/GB | gateway CPU s/GB |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const result of report.results) {
    if (result.scenario === 1) continue;
    lines.push(
      `| ${result.scenario} | ${result.label} | ${result.recordsPerSec} | ${result.mbPerSec} | ${result.avgMs} | ` +
        `${result.p50Ms} | ${result.p95Ms} | ${result.p99Ms} | ${result.p999Ms} | ${result.maxMs} | ` +
        `${result.storageCpuSecondsPerGb} | ${result.gatewayCpuSecondsPerGb} |`,
    );
  }
  const segmentStore = report.results.find((result) => result.scenario === 1);
  if (segmentStore !== undefined) {
    lines.push(
      '',
      '## Scenario 1: segment store',
      '',
      '```json',
      JSON.stringify(segmentStore.segmentStore, null, 2),
      '```',
    );
  }
  if (report.partitions !== undefined) lines.push(...partitionsMarkdown(report.partitions));
  lines.push('', '## Peak RSS (MB, VmHWM)', '');
  for (const { cluster, peakRssMb } of report.memory) {
    lines.push(
      `- ${cluster}: ${Object.entries(peakRssMb)
        .map(([name, mb]) => `${name} ${mb}`)
        .join(', ')}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** Two horizontal bar charts: throughput, and p50/p99/p99.9 latency, one row per scenario. */
function svgChart(report) {
  const rows = report.results.filter((result) => result.scenario !== 1);
  const escape = (text) => String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const rowHeight = 34;
  const labelWidth = 330;
  const barWidth = 420;
  const chartHeight = 40 + rows.length * rowHeight;
  const height = chartHeight * 2 + 40;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${labelWidth + barWidth + 140}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
  ];
  const maxRate = Math.max(1, ...rows.map((row) => row.recordsPerSec));
  parts.push(`<text x="10" y="20" font-size="14" font-weight="bold">Throughput (records/s)</text>`);
  rows.forEach((row, index) => {
    const y = 34 + index * rowHeight;
    const width = (row.recordsPerSec / maxRate) * barWidth;
    parts.push(
      `<text x="10" y="${y + 14}">${escape(`${row.scenario}. ${row.label}`)}</text>`,
      `<rect x="${labelWidth}" y="${y}" width="${width.toFixed(1)}" height="20" fill="#4878a8"/>`,
      `<text x="${labelWidth + width + 6}" y="${y + 14}">${row.recordsPerSec.toLocaleString('en')}</text>`,
    );
  });
  const top = chartHeight + 20;
  const maxLatency = Math.max(0.001, ...rows.map((row) => row.p999Ms));
  const colours = { p50Ms: '#8fbc8f', p99Ms: '#e8a33d', p999Ms: '#c0504d' };
  parts.push(
    `<text x="10" y="${top + 20}" font-size="14" font-weight="bold">Latency (ms): p50 green, p99 orange, p99.9 red</text>`,
  );
  rows.forEach((row, index) => {
    const y = top + 34 + index * rowHeight;
    parts.push(`<text x="10" y="${y + 14}">${escape(`${row.scenario}. ${row.label}`)}</text>`);
    Object.entries(colours).forEach(([key, colour], band) => {
      const width = (row[key] / maxLatency) * barWidth;
      parts.push(
        `<rect x="${labelWidth}" y="${y + band * 7}" width="${width.toFixed(1)}" height="6" fill="${colour}"/>`,
      );
    });
    parts.push(
      `<text x="${labelWidth + barWidth + 6}" y="${y + 14}">${row.p50Ms} / ${row.p99Ms} / ${row.p999Ms}</text>`,
    );
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

async function main() {
  const startedAt = new Date().toISOString();
  const results = [];
  const memory = [];
  if (wanted(1)) results.push(await scenarioOne());
  if ([2, 5, 7].some(wanted)) await singleNodeGroup(results, memory);
  if ([3, 4, 6].some(wanted)) {
    const maximum = await threeNodeGroup(results, memory);
    if (wanted(6)) await endToEndGroup(maximum, results, memory);
  }
  const partitions = partitionsWanted ? await partitionsScenario() : undefined;
  const cpus = readFileSync('/proc/cpuinfo', 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('processor')).length;
  const report = {
    startedAt,
    quick,
    machine: `${cpus} CPUs, node ${process.version}, load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')} at the end`,
    results,
    memory,
    ...(partitions === undefined ? {} : { partitions }),
  };
  mkdirSync(resultsDirectory, { recursive: true });
  const stem = path.join(resultsDirectory, startedAt.replace(/[:.]/g, '-'));
  writeFileSync(`${stem}.json`, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(`${stem}.md`, markdown(report));
  writeFileSync(`${stem}.svg`, svgChart(report));
  process.stdout.write(markdown(report));
  log(`wrote ${stem}.json, .md and .svg`);
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exitCode = 1;
});

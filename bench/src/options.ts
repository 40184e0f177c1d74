/**
 * The command line of `npm run bench`: which scenarios, and how many records each moves.
 *
 *   --quick      small counts: a smoke run of a minute or two
 *   --scale F    every record count times F (e.g. --quick --scale 5 for a medium run)
 *   --only LIST  scenarios to run, comma-separated: numbers 1-7, 9 (or `kafka`: Kafka's own
 *                tools on Spool and on Apache Kafka), and `partitions` and `records`, which run
 *                only when named
 *   --tls        every cluster is `spool dev --secure` (TLS and mTLS on every port, the data
 *                port on the copy path) and the load generators connect with its client.properties
 *   --help       this text
 */
export const usage = `usage: npm run bench [-- --quick] [-- --scale F] [-- --only 2,3,partitions]

Runs Spool's standard benchmark scenarios (issue 11), each group on a fresh \`spool dev\`
cluster, and writes bench/results/<date>.{json,md,svg}. Needs a build first
(npx nx run-many -t build). Linux only (/proc).

  --quick      small counts: a smoke run of a minute or two
  --scale F    every record count times F (e.g. --quick --scale 5 for a medium run)
  --only LIST  scenarios to run, comma-separated: 1-7, 9 or kafka (Kafka's own
               ProducerPerformance and ConsumerPerformance on Spool's Kafka listener and on
               Apache Kafka 4.4.0, beside the SDK; needs Java and Maven, as
               test/support/install-test-tools.sh prepares them), and partitions and records
               (run only when named)
  --tls        clusters run spool dev --secure, clients use TLS with a client certificate
  --help       this text
`;

/** Record counts of the scenarios (s6 and s7 in seconds and reads where named so). */
export interface Counts {
  s2: number;
  s3: number;
  s4: number;
  s5: number;
  s6Seconds: number;
  s6WarmupSeconds: number;
  s7Small: number;
  reads: number;
  /** Records each load generator of scenario 9 moves (per setting, per path). */
  kafka: number;
}

/** A numbered scenario, or a named one (`partitions`). */
export type ScenarioId = number | string;

export interface BenchOptions {
  readonly help: boolean;
  readonly quick: boolean;
  /** tls: clusters started with `spool dev --secure`, clients over TLS. */
  readonly tls: boolean;
  /** Undefined: every numbered scenario. */
  readonly only: ReadonlySet<ScenarioId> | undefined;
  readonly counts: Counts;
}

/** Record counts: the full run, and --quick for a smoke run of a minute or two. */
const quickCounts: Counts = {
  s2: 50_000,
  s3: 30_000,
  s4: 10_000,
  s5: 200_000,
  s6Seconds: 3,
  s6WarmupSeconds: 1,
  s7Small: 5_000,
  reads: 50,
  kafka: 50_000,
};
const fullCounts: Counts = {
  s2: 2_000_000,
  s3: 1_000_000,
  s4: 300_000,
  s5: 10_000_000,
  s6Seconds: 20,
  s6WarmupSeconds: 5,
  s7Small: 10_000,
  reads: 1_000,
  kafka: 2_000_000,
};

const flagsWithValue = new Set(['--only', '--scale']);
const flags = new Set(['--quick', '--help', '--tls', ...flagsWithValue]);

/** Throws an Error naming the flag and value at fault. */
export function parseOptions(argv: readonly string[]): BenchOptions {
  for (let index = 0; index < argv.length; index++) {
    const argument = argv[index]!;
    if (!flags.has(argument)) {
      throw new Error(`unknown argument "${argument}"; npm run bench -- --help lists the flags`);
    }
    if (flagsWithValue.has(argument)) {
      if (argv[index + 1] === undefined || argv[index + 1]!.startsWith('--')) {
        throw new Error(`${argument} needs a value`);
      }
      index++;
    }
  }
  const quick = argv.includes('--quick');
  const onlyIndex = argv.indexOf('--only');
  /** --only 2,3,partitions: numbered scenarios as numbers, named ones as their names. */
  const only =
    onlyIndex >= 0
      ? new Set<ScenarioId>(
          (argv[onlyIndex + 1] ?? '')
            .split(',')
            .map((item) => (/^\d+$/.test(item) ? Number(item) : item)),
        )
      : undefined;
  const scaleIndex = argv.indexOf('--scale');
  const scale = scaleIndex >= 0 ? Number(argv[scaleIndex + 1]) : 1;
  if (!Number.isFinite(scale) || scale <= 0) {
    throw new Error(`--scale is "${argv[scaleIndex + 1]}"; expected a number above 0`);
  }
  const counts = { ...(quick ? quickCounts : fullCounts) };
  for (const key of Object.keys(counts) as (keyof Counts)[]) {
    counts[key] = Math.max(1, Math.round(counts[key] * scale));
  }
  return { help: argv.includes('--help'), quick, tls: argv.includes('--tls'), only, counts };
}

export function isWanted(options: BenchOptions, scenario: ScenarioId): boolean {
  return options.only === undefined || options.only.has(scenario);
}

/** Scenario 9, Kafka's tools on Spool and on Apache Kafka: `--only 9` or `--only kafka`. */
export function isKafkaWanted(options: BenchOptions): boolean {
  return isWanted(options, 9) || isWanted(options, 'kafka');
}

/** The records scenario (the record-level API beside the raw path) runs only when named. */
export function isRecordsWanted(options: BenchOptions): boolean {
  return options.only !== undefined && options.only.has('records');
}

/** The partitions scenario runs only when --only names it. */
export function isPartitionsWanted(options: BenchOptions): boolean {
  return options.only !== undefined && options.only.has('partitions');
}

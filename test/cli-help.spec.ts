// Proves the `spool` command line answers every way a new user asks, through the built CLI as a
// child process: every command and subcommand in the CLI's own table (checked against a hand
// list, so neither can lose one) answers --help and -h with exit 0, text on stdout naming each of
// its flags, and `spool help <command> [subcommand]` prints the same; the documented exit codes
// hold (unknown command and bad flags 2, a gateway nobody listens on 3 within seconds for
// produce, consume and topic list), and a negative number is a flag's value (--throughput -1).
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { listCommands } from '@spool/cli';
import { describe, expect, it } from 'vitest';
import { workspaceRoot } from './support/service-process';

interface CliResult {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  elapsedMs: number;
}

const cliEntryPoint = path.join(workspaceRoot, 'apps/cli/dist/main.js');
/** Nothing listens on port 1 of loopback: connections are refused at once. */
const unreachableGateway = ['--gateway', '127.0.0.1:1'];
/**
 * "Promptly": the CLI's connect check answers a refused connection in milliseconds, and the
 * whole run takes ~0.5 s; the bound leaves room for Node.js starting on a loaded machine, far
 * below the 60 s a send used to wait.
 */
const unreachableExitMsMax = 10_000;
/** ~50 short processes, 4 at a time: seconds on an idle machine, more on a loaded one. */
const everyHelpTimeoutMs = 180_000;
/** Child processes at once: the machine has 2 cores shared with other work. */
const concurrency = 4;

function runCli(argv: readonly string[], input = ''): Promise<CliResult> {
  const startedAtMs = Date.now();
  const child = spawn(process.execPath, [cliEntryPoint, ...argv], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: withoutGatewayVariable(process.env),
  });
  const result = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (result.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (result.stderr += chunk.toString()));
  child.stdin.end(input);
  // Bounded: a CLI that hangs is killed and fails the test by its exit code.
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return new Promise((resolve) =>
    child.once('close', (exitCode) => {
      clearTimeout(timer);
      resolve({ exitCode, ...result, elapsedMs: Date.now() - startedAtMs });
    }),
  );
}

/** The gateway of each line is its --gateway or the default, whatever the shell exported. */
function withoutGatewayVariable(environment: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const copy = { ...environment };
  delete copy['SPOOL_GATEWAY'];
  return copy;
}

async function runAll(lines: readonly (readonly string[])[]): Promise<CliResult[]> {
  const results: CliResult[] = new Array<CliResult>(lines.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < lines.length) {
        const index = next++;
        results[index] = await runCli(lines[index]!);
      }
    }),
  );
  return results;
}

/** Every command and subcommand, written out by hand: the table must hold exactly these. */
const expectedPaths = [
  'topic',
  'topic create',
  'topic list',
  'topic describe',
  'topic delete',
  'topic alter-config',
  'group',
  'group list',
  'group describe',
  'group delete',
  'group reset-offsets',
  'produce',
  'consume',
  'bench',
  'bench produce',
  'bench consume',
  'bench e2e',
  'bench seek',
  'bench partitions',
  'cluster',
  'cluster status',
  'partitions',
  'partitions reassign',
  'broker',
  'broker decommission',
  'broker config',
  'acl',
  'acl create',
  'acl list',
  'acl delete',
  'user',
  'user create',
  'user list',
  'tls',
  'tls kubernetes-secrets',
  'user delete',
  'dev',
  'controller',
  'storage-node',
  'coordinator',
  'gateway',
];

/** Flags the help must name, by hand, for the commands that parse their own line. */
const selfParsedFlags: Readonly<Record<string, readonly string[]>> = {
  dev: ['data-dir', 'gateway-port', 'kafka-port', 'nodes', 'coordinators', 'restart', 'profile-dir'],
  // The services' settings come from libs/common; these are common to all and one of each.
  controller: ['grpc-port', 'metrics-port', 'log-level', 'metadata-path'],
  'storage-node': ['grpc-port', 'metrics-port', 'log-level', 'controller-addresses'],
  coordinator: ['grpc-port', 'metrics-port', 'log-level', 'coordinator-id'],
  gateway: ['grpc-port', 'metrics-port', 'log-level', 'controller-addresses'],
};

/** Flags a few commands must have, by hand, so a declaration that lost one is caught. */
const handListedFlags: Readonly<Record<string, readonly string[]>> = {
  'topic create': ['partitions', 'replication-factor', 'config', 'gateway', 'json', 'help'],
  produce: ['file', 'key-separator', 'acks', 'compression'],
  consume: ['from-beginning', 'partition', 'offset', 'max-messages', 'format', 'group'],
  'bench produce': ['topic', 'records', 'throughput', 'acks', 'linger-ms', 'keys'],
  'bench seek': ['topic', 'reads'],
  'bench partitions': ['create', 'partitions', 'nodes', 'idle-seconds', 'timeout-seconds', 'json'],
  'group reset-offsets': ['topic', 'to-earliest', 'to-latest', 'to-datetime', 'to-offset'],
  'partitions reassign': ['generate', 'execute', 'verify', 'cancel', 'topics', 'brokers', 'plan'],
  'acl create': [
    ...['allow-principal', 'deny-principal', 'allow-host', 'deny-host', 'operation', 'topic'],
    ...['group', 'cluster', 'transactional-id', 'resource-pattern-type'],
  ],
  'user create': ['password', 'mechanism'],
  'broker config': ['default', 'json', 'gateway'],
};

const listings = listCommands();

describe('spool --help', () => {
  it('lists exactly the commands written out here', () => {
    expect(listings.map((listing) => listing.path.join(' ')).sort()).toEqual(
      [...expectedPaths].sort(),
    );
    for (const [name, flags] of Object.entries(handListedFlags)) {
      const listing = listings.find((candidate) => candidate.path.join(' ') === name);
      expect(listing?.flags, name).toEqual(expect.arrayContaining([...flags]));
    }
  });

  it(
    'answers --help and -h on every command and subcommand, naming each flag',
    async () => {
      const lines = listings.flatMap((listing) => [
        [...listing.path, '--help'],
        [...listing.path, '-h'],
      ]);
      const results = await runAll(lines);
      for (const [index, result] of results.entries()) {
        const line = `spool ${lines[index]!.join(' ')}`;
        const listing = listings[Math.floor(index / 2)]!;
        expect({ line, exitCode: result.exitCode, stderr: result.stderr }).toEqual({
          line,
          exitCode: 0,
          stderr: '',
        });
        const flags = listing.flags ?? selfParsedFlags[listing.path.join(' ')]!;
        expect(flags.length, line).toBeGreaterThan(0);
        for (const flag of flags)
          expect(result.stdout, `${line} names --${flag}`).toContain(`--${flag}`);
        if (listing.flags !== undefined) {
          expect(result.stdout, line).toMatch(/^usage: spool /);
          expect(result.stdout, line).toMatch(/\nexamples?:\n {2}\S/);
        }
      }
      // --help and -h print the same text.
      for (let index = 0; index < results.length; index += 2) {
        expect(results[index + 1]!.stdout).toBe(results[index]!.stdout);
      }
    },
    everyHelpTimeoutMs,
  );

  it('prints the same help for spool help <command> [subcommand] and for help in its place', async () => {
    const lines = [
      ['help', 'topic', 'create'],
      ['topic', 'create', '--help'],
      ['topic', 'create', 'help'],
      ['help', 'produce'],
      ['produce', 'help'],
      ['help', 'dev'],
      ['dev', '--help'],
      ['help'],
      ['--help'],
    ];
    const [helpCreate, create, createWord, helpProduce, produceWord, helpDev, dev, help, dashHelp] =
      await runAll(lines);
    expect(helpCreate).toMatchObject({ exitCode: 0, stdout: create!.stdout });
    expect(createWord).toMatchObject({ exitCode: 0, stdout: create!.stdout });
    expect(helpProduce!.stdout).toMatch(/^usage: spool produce TOPIC/);
    expect(produceWord).toMatchObject({ exitCode: 0, stdout: helpProduce!.stdout });
    expect(helpDev).toMatchObject({ exitCode: 0, stdout: dev!.stdout });
    expect(help).toMatchObject({ exitCode: 0, stderr: '' });
    for (const listing of listings.filter((candidate) => candidate.path.length === 1)) {
      expect(help!.stdout).toContain(`\n  ${listing.path[0]} `);
    }
    expect(help!.stdout).toContain('exit codes: 0 ok, 1 the operation failed, 2 bad usage, 3 ');
    expect(dashHelp!.stdout).toBe(help!.stdout);
  });
});

describe('spool exit codes', () => {
  it('exits 2 on usage mistakes, naming them on stderr', async () => {
    const lines = [
      ['foo'],
      [],
      ['help', 'foo'],
      ['topic', 'create', 't', '--bogus'],
      ['dev', '--bogus'],
      ['bench', 'produce', '--topic', 't', '--throughput', '-2'],
    ];
    const [unknown, none, helpUnknown, badFlag, devBadFlag, badThroughput] = await runAll(lines);
    expect(unknown).toMatchObject({ exitCode: 2, stdout: '' });
    expect(unknown!.stderr).toContain('unknown command "foo"');
    expect(none).toMatchObject({ exitCode: 2, stdout: '' });
    expect(none!.stderr).toMatch(/^usage: spool <command>/);
    expect(helpUnknown).toMatchObject({ exitCode: 2 });
    expect(badFlag).toMatchObject({ exitCode: 2, stderr: 'spool: USAGE: unknown flag --bogus\n' });
    expect(devBadFlag!.exitCode).toBe(2);
    expect(devBadFlag!.stderr).toContain('--bogus');
    expect(badThroughput).toMatchObject({ exitCode: 2 });
    expect(badThroughput!.stderr).toContain('--throughput must be an integer from -1');
  });

  it('exits 3 within seconds when nothing listens at the gateway', async () => {
    const lines = [
      ['produce', 'orders', ...unreachableGateway],
      ['consume', 'orders', ...unreachableGateway],
      ['topic', 'list', ...unreachableGateway],
      // -1 is taken as --throughput's value: the line parses and the gateway is tried.
      ['bench', 'produce', '--topic', 'orders', '--throughput', '-1', ...unreachableGateway],
    ];
    const results = await Promise.all([
      runCli(lines[0]!, 'a record\n'),
      ...lines.slice(1).map((line) => runCli(line)),
    ]);
    for (const [index, result] of results.entries()) {
      const line = `spool ${lines[index]!.join(' ')}`;
      expect({ line, exitCode: result.exitCode }).toEqual({ line, exitCode: 3 });
      expect(result.stderr, line).toMatch(/^spool: UNAVAILABLE: [^\n]+\n$/);
      expect(result.elapsedMs, line).toBeLessThan(unreachableExitMsMax);
    }
  });
});

// Proves the SDK installs as a user gets it: `npm run pack:sdk`'s tarball goes into an empty
// project in the OS temp folder (outside the repository, so no workspace package can leak in),
// an ES module program and a CommonJS program type-check against it with the workspace's tsc
// (strict, library declarations checked too) and, compiled, each produces to and consumes from a
// real `spool dev` cluster. The tarball must carry no `spool-source` condition and nothing of the
// segment store.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { workspaceRoot } from './support/service-process';

interface ClusterFile {
  processes: Array<{ role: string; pid: number; ports: { grpc: number } }>;
}

/** The last line a consumer program prints. */
interface ProgramReport {
  moduleSystem: string;
  partitions: number[];
  values: string[];
}

const runFile = promisify(execFile);
const cliEntryPoint = path.join(workspaceRoot, 'apps/cli/dist/main.js');
const typescriptCompiler = path.join(workspaceRoot, 'node_modules/typescript/bin/tsc');
const packScript = path.join(workspaceRoot, 'deploy/sdk/pack-sdk.mjs');
/** Installing from npm's cache takes ~15 s here; a cold cache fetches ~60 packages. */
const installTimeoutMs = 120_000;
const programTimeoutMs = 30_000;
/** tsc with the declarations checked takes ~4 s alone; a loaded 2-core machine stretches it. */
const typeCheckAndRunTestTimeoutMs = 120_000;
const messageCount = 40;

const consumerProject = mkdtempSync(path.join(tmpdir(), 'spool-sdk-package-'));
const dataDirectory = mkdtempSync(path.join(tmpdir(), 'spool-sdk-package-data-'));
let dev: ChildProcess | undefined;
let devExited: Promise<number | null> | undefined;
let devOutput = '';
let tarball: string;

async function run(command: string, args: readonly string[], cwd: string, timeoutMs: number) {
  try {
    return await runFile(command, args, { cwd, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
  } catch (error) {
    const failed = error as Error & { stdout?: string; stderr?: string };
    throw new Error(
      `${path.basename(command)} ${args.join(' ')} failed in ${cwd}: ${failed.message}\n` +
        `${failed.stdout ?? ''}${failed.stderr ?? ''}`,
      { cause: error },
    );
  }
}

/**
 * The program body both module systems run: create a topic, produce keyed messages with acks
 * 'all', read them all back from the beginning, print a report as the last line, close all.
 */
const programBody = `
const [gateway, topic] = process.argv.slice(2);
const messageCount = ${messageCount};

async function main(): Promise<void> {
  if (gateway === undefined || topic === undefined) throw new Error('usage: GATEWAY TOPIC');
  const spool = new Spool({ brokers: [gateway], clientId: topic });
  const admin = spool.admin();
  await admin.createTopics({ topics: [{ topic, numPartitions: 2, replicationFactor: 1 }] });
  await admin.disconnect();

  const producer = spool.producer({ acks: 'all', lingerMs: 5 });
  const messages: Message[] = Array.from({ length: messageCount }, (_, index) => ({
    key: 'key-' + index,
    value: 'value-' + index,
  }));
  const produced = await producer.send({ topic, messages });
  await producer.disconnect();

  const consumer = spool.consumer();
  const values: string[] = [];
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      values.push(message.value === null ? '' : Buffer.from(message.value).toString());
    },
  });
  const deadline = Date.now() + 20_000;
  while (values.length < messageCount && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await consumer.disconnect();
  const moduleSystem = typeof require === 'function' ? 'commonjs' : 'module';
  const partitions = [...new Set(produced.map((metadata) => metadata.partition))].sort(
    (left, right) => left - right,
  );
  console.log(JSON.stringify({ moduleSystem, partitions, values: values.sort() }));
}

// Compiled only: a broker list of numbers must not type-check, so the SDK's types are real.
export function misuse(): Spool {
  // @ts-expect-error brokers are "host:port" strings
  return new Spool({ brokers: [9092] });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
`;

/** A consumer program folder of its own module system, with a strict tsconfig. */
function writeProgram(folder: string, moduleSystem: 'module' | 'commonjs', header: string) {
  const programFolder = path.join(consumerProject, folder);
  mkdirSync(programFolder);
  writeFileSync(
    path.join(programFolder, 'package.json'),
    JSON.stringify({ name: `sdk-${folder}`, private: true, type: moduleSystem }),
  );
  const compilerOptions =
    moduleSystem === 'module'
      ? { module: 'nodenext', moduleResolution: 'nodenext' }
      : { module: 'commonjs', moduleResolution: 'node10' };
  writeFileSync(
    path.join(programFolder, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        ...compilerOptions,
        target: 'ES2022',
        strict: true,
        skipLibCheck: false,
        types: ['node'],
        outDir: 'out',
      },
      files: ['program.ts'],
    }),
  );
  writeFileSync(path.join(programFolder, 'program.ts'), `${header}\n${programBody}`);
  return programFolder;
}

async function startCluster(): Promise<string> {
  dev = spawn(
    process.execPath,
    [
      cliEntryPoint,
      'dev',
      '--nodes',
      '1',
      '--gateway-port',
      '0',
      '--kafka-port',
      '0',
      '--data-dir',
      dataDirectory,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  dev.stdout!.on('data', (chunk: Buffer) => (devOutput += chunk.toString()));
  dev.stderr!.on('data', (chunk: Buffer) => (devOutput += chunk.toString()));
  devExited = new Promise((resolve) => dev!.once('exit', (code) => resolve(code)));
  await vi.waitFor(
    () => expect(/processes ready/.test(devOutput) || dev!.exitCode !== null).toBe(true),
    { timeout: 60_000, interval: 50 },
  );
  expect(devOutput).toMatch(/processes ready/);
  const cluster = JSON.parse(
    readFileSync(path.join(dataDirectory, 'cluster.json'), 'utf8'),
  ) as ClusterFile;
  return `127.0.0.1:${cluster.processes.find((entry) => entry.role === 'gateway')!.ports.grpc}`;
}

let gatewayAddress: Promise<string>;

beforeAll(async () => {
  // The cluster starts while the SDK is packed and installed; the programs need both.
  gatewayAddress = startCluster();
  gatewayAddress.catch(() => undefined);
  const packed = await run(
    process.execPath,
    [packScript, '--skip-build', '--out', path.join(consumerProject, 'tarball')],
    workspaceRoot,
    60_000,
  );
  tarball = packed.stdout.trim().split('\n').at(-1)!;
  expect(path.basename(tarball)).toMatch(/^spool-client-\d+\.\d+\.\d+\.tgz$/);

  writeFileSync(
    path.join(consumerProject, 'package.json'),
    JSON.stringify({ name: 'sdk-consumer', private: true }),
  );
  const typesNodeVersion = (
    JSON.parse(readFileSync(path.join(workspaceRoot, 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>;
    }
  ).devDependencies['@types/node'];
  await run(
    'npm',
    [
      'install',
      tarball,
      `@types/node@${typesNodeVersion}`,
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
    ],
    consumerProject,
    installTimeoutMs,
  );
}, installTimeoutMs + 90_000);

afterAll(async () => {
  try {
    if (dev !== undefined && dev.exitCode === null) {
      dev.kill('SIGINT');
      expect(await devExited).toBe(0);
    }
  } finally {
    dev?.kill('SIGKILL');
    rmSync(dataDirectory, { recursive: true, force: true });
    rmSync(consumerProject, { recursive: true, force: true });
  }
}, 30_000);

describe('the packed SDK', () => {
  it('installs outside the repository with its workspace packages bundled', () => {
    expect(path.relative(workspaceRoot, consumerProject).startsWith('..')).toBe(true);
    const installed = path.join(consumerProject, 'node_modules/@spool/client');
    const manifestText = readFileSync(path.join(installed, 'package.json'), 'utf8');
    expect(manifestText).not.toContain('spool-source');
    const manifest = JSON.parse(manifestText) as {
      private?: boolean;
      exports: Record<string, unknown>;
      dependencies: Record<string, string>;
      bundleDependencies: string[];
    };
    expect(manifest.private).toBeUndefined();
    expect(manifest.bundleDependencies.sort()).toEqual([
      '@spool/common',
      '@spool/errors',
      '@spool/protocol',
      '@spool/record-batch',
    ]);
    expect(Object.keys(manifest.dependencies)).not.toContain('@spool/segment-store');
    for (const bundled of manifest.bundleDependencies) {
      const bundledManifest = readFileSync(
        path.join(installed, 'node_modules', bundled, 'package.json'),
        'utf8',
      );
      expect(bundledManifest).not.toContain('spool-source');
    }
    // No test code: no testing entry (the workspace's libs/client has one), no compiled spec.
    expect(manifest.exports).not.toHaveProperty(['./testing']);
    expect(existsSync(path.join(workspaceRoot, 'libs/client/dist/testing/index.js'))).toBe(true);
    const shipped = readdirSync(installed, { recursive: true, encoding: 'utf8' });
    expect(shipped.filter((file) => /(?:^|\/)testing(?:\/|\.|$)|\.spec\./.test(file))).toEqual([]);
  });

  it(
    'type-checks and runs an ES module program that imports { Spool }',
    async () => {
      const folder = writeProgram(
        'esm',
        'module',
        "import { Spool, type Message } from '@spool/client';",
      );
      await run(process.execPath, [typescriptCompiler, '-p', '.'], folder, 60_000);
      const output = await run(
        process.execPath,
        ['out/program.js', await gatewayAddress, 'packed-esm'],
        folder,
        programTimeoutMs,
      );
      const report = JSON.parse(output.stdout.trim().split('\n').at(-1)!) as ProgramReport;
      expect(report.moduleSystem).toBe('module');
      expect(report.partitions).toEqual([0, 1]);
      expect(report.values).toEqual(
        Array.from({ length: messageCount }, (_, index) => `value-${index}`).sort(),
      );
    },
    typeCheckAndRunTestTimeoutMs,
  );

  it(
    'type-checks and runs a CommonJS program that requires the SDK',
    async () => {
      const folder = writeProgram(
        'cjs',
        'commonjs',
        "import sdk = require('@spool/client');\nconst { Spool } = sdk;\ntype Spool = sdk.Spool;\n" +
          'type Message = sdk.Message;',
      );
      await run(process.execPath, [typescriptCompiler, '-p', '.'], folder, 60_000);
      expect(readFileSync(path.join(folder, 'out/program.js'), 'utf8')).toContain(
        'require("@spool/client")',
      );
      const output = await run(
        process.execPath,
        ['out/program.js', await gatewayAddress, 'packed-cjs'],
        folder,
        programTimeoutMs,
      );
      const report = JSON.parse(output.stdout.trim().split('\n').at(-1)!) as ProgramReport;
      expect(report.moduleSystem).toBe('commonjs');
      expect(report.partitions).toEqual([0, 1]);
      expect(report.values).toEqual(
        Array.from({ length: messageCount }, (_, index) => `value-${index}`).sort(),
      );
    },
    typeCheckAndRunTestTimeoutMs,
  );
});

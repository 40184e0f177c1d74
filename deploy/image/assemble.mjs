#!/usr/bin/env node
// Assembles the container image's runtime contents into a folder: exactly what the runtime stage
// of deploy/Dockerfile holds under /app, because the Dockerfile's build stage runs this script
// and the runtime stage copies its output whole. Without a Docker engine, the same folder is what
// test/image-contents.spec.ts starts a cluster from.
//
// Contents: the root and every workspace's package.json (and the lock file), each project's
// built `dist/` without its test code (compiled specs, a library's `dist/testing/`), the CLI's
// `bin/`, the protocol's descriptor set (read at run time for gRPC reflection), the segment
// store's native addon, and production node_modules installed by `npm ci --omit=dev` in the
// folder itself, so workspace packages resolve as symlinks to their folders there and nothing of
// the build tree leaks in.
//
// usage: node deploy/image/assemble.mjs --out DIR [--prefer-offline]
//   The projects must be built first (npm run build) and the native addon compiled (npm ci
//   does it). --prefer-offline takes packages from npm's cache where it has them (tests).
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const workspaceRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Files besides dist/ and package.json that a project needs at run time, relative to it. */
const runtimeExtras = {
  'apps/cli': ['bin'],
  'libs/protocol': ['src/generated/spool.binpb'],
  'libs/segment-store': ['build/Release/segment_store_native.node'],
};

/** A library's testing entry point, built to dist/testing/ for the tests, never run in the image. */
function isTestCode(file) {
  return /[\\/]dist[\\/]testing([\\/]|$)/.test(file);
}

function fail(message) {
  process.stderr.write(`assemble: ${message}\n`);
  process.exit(1);
}

function workspaceFolders() {
  const manifest = JSON.parse(readFileSync(path.join(workspaceRoot, 'package.json'), 'utf8'));
  const folders = [];
  for (const pattern of manifest.workspaces) {
    if (!pattern.endsWith('/*')) fail(`workspace pattern ${pattern} is not "<folder>/*"`);
    const parent = pattern.slice(0, -2);
    for (const entry of readdirSync(path.join(workspaceRoot, parent), { withFileTypes: true })) {
      if (
        entry.isDirectory() &&
        existsSync(path.join(workspaceRoot, parent, entry.name, 'package.json'))
      ) {
        folders.push(`${parent}/${entry.name}`);
      }
    }
  }
  return folders.sort();
}

function copy(relativePath, out) {
  const from = path.join(workspaceRoot, relativePath);
  if (!existsSync(from)) fail(`${relativePath} is missing; build first (npm ci && npm run build)`);
  mkdirSync(path.dirname(path.join(out, relativePath)), { recursive: true });
  cpSync(from, path.join(out, relativePath), {
    recursive: true,
    // Build bookkeeping and test code are not part of the image: compiled specs, and a
    // library's testing entry (dist/testing/, `@spool/<lib>/testing`: fakes, etcd test servers).
    filter: (source) =>
      !source.endsWith('.tsbuildinfo') &&
      !/\.spec\.(js|d\.ts)(\.map)?$/.test(source) &&
      !isTestCode(source),
  });
}

export function assemble(out, { offline = false } = {}) {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  for (const file of ['package.json', 'package-lock.json']) copy(file, out);
  for (const folder of workspaceFolders()) {
    copy(`${folder}/package.json`, out);
    copy(`${folder}/dist`, out);
    for (const extra of runtimeExtras[folder] ?? []) copy(`${folder}/${extra}`, out);
  }
  // Production dependencies only. Scripts are not run: the one that matters, the native addon's
  // build, already ran in the build tree and its output was copied above.
  const install = spawnSync(
    'npm',
    [
      'ci',
      '--omit=dev',
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      ...(offline ? ['--prefer-offline'] : []),
    ],
    {
      cwd: out,
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, NODE_ENV: 'production' },
    },
  );
  if (install.status !== 0) fail(`npm ci --omit=dev failed in ${out} (exit ${install.status})`);
  writeFileSync(
    path.join(out, 'image-contents.json'),
    `${JSON.stringify({ workspaces: workspaceFolders(), assembledAt: new Date().toISOString() }, null, 2)}\n`,
  );
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: { out: { type: 'string' }, 'prefer-offline': { type: 'boolean', default: false } },
    strict: true,
  });
  if (values.out === undefined)
    fail('usage: node deploy/image/assemble.mjs --out DIR [--prefer-offline]');
  const out = path.resolve(values.out);
  assemble(out, { offline: values['prefer-offline'] });
  process.stdout.write(`assemble: image contents in ${out}\n`);
}

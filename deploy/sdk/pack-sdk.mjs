#!/usr/bin/env node
// Packs the TypeScript SDK, @spool/client, as one tarball a user installs outside this repository:
// `npm install ./spool-client-<version>.tgz`. `npm run pack:sdk` runs it.
//
// Why a staged folder with bundleDependencies, and not `npm pack` in libs/client:
// 1. The SDK imports @spool/common, @spool/errors, @spool/protocol and @spool/record-batch,
//    workspace packages that are not published.
//    npm's own mechanism for shipping unpublished dependencies inside a package is
//    bundleDependencies: they travel in the tarball's node_modules/ and npm installs them from
//    there, never from a registry. Their built code is shipped unchanged, so what a user runs is
//    byte for byte what the workspace's tests run; rewriting the SDK's imports into relative paths
//    would ship code no test has seen.
// 2. The workspace's package.json files carry the `spool-source` export condition (sources for
//    tests and type-checks inside the repository) and `private`. The staged copies are rewritten:
//    no `spool-source`, no scripts, and exports with `types`, `import` and `require` conditions.
// 3. Third-party dependencies of the SDK and of every bundled package stay ordinary npm
//    dependencies of the SDK, at the exact versions the workspace pins (a package pinned at two
//    different versions stops the pack), so npm installs the right native binaries (snappy, lz4,
//    zstd, crc32) for the user's platform instead of ours.
// 4. Only workspace libraries of scope `shared` or `client` with no native addon may be bundled:
//    the SDK must never pull in the segment store (scope `data`, a node-gyp addon built in the
//    workspace) or a server. The pack fails naming the package if the import graph reaches one.
// 5. Before packing, every `require` in the staged JavaScript is resolved: a relative path must
//    name a staged file, a bare one must be a Node built-in or a declared dependency of its
//    package. Then Node itself loads the staged SDK both ways, and the names an ES module import
//    sees (cjs-module-lexer's detection of the CommonJS output) must equal those of `require`.
//
// Source maps and build bookkeeping are left out: the TypeScript sources they point at are not
// shipped. Test code is left out too: compiled specs and a library's testing entry (dist/testing/).
// Declarations (.d.ts) are, so consumers type-check against the SDK.
//
// usage: node deploy/sdk/pack-sdk.mjs [--out DIR] [--skip-build]
//   --out         where the tarball goes (default dist/sdk); its path is the last line printed
//   --skip-build  use the projects' dist/ as they are (they must be built)
import { spawnSync } from 'node:child_process';
import { builtinModules } from 'node:module';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const workspaceRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const sdkPackageName = '@spool/client';
/** nx scopes a bundled workspace library may have: shared code and client code, no servers. */
const bundleableScopes = new Set(['scope:shared', 'scope:client']);
/** Files besides dist/ that a bundled package reads at run time, relative to its folder. */
const runtimeExtras = {
  '@spool/protocol': ['src/generated/spool.binpb'],
};

function fail(message) {
  process.stderr.write(`pack-sdk: ${message}\n`);
  process.exit(1);
}

function readJson(file) {
  return JSON.parse(readFileSync(file, 'utf8'));
}

function run(command, args, options) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  if (result.error) fail(`${command} ${args.join(' ')}: ${result.error.message}`);
  if (result.status !== 0) fail(`${command} ${args.join(' ')} exited with ${result.status}`);
  return result;
}

/** name → folder (absolute) of every workspace package. */
function workspacePackages() {
  const manifest = readJson(path.join(workspaceRoot, 'package.json'));
  const packages = new Map();
  for (const pattern of manifest.workspaces) {
    if (!pattern.endsWith('/*')) fail(`workspace pattern ${pattern} is not "<folder>/*"`);
    const parent = path.join(workspaceRoot, pattern.slice(0, -2));
    for (const entry of readdirSync(parent, { withFileTypes: true })) {
      const manifestFile = path.join(parent, entry.name, 'package.json');
      if (entry.isDirectory() && existsSync(manifestFile)) {
        packages.set(readJson(manifestFile).name, path.join(parent, entry.name));
      }
    }
  }
  return packages;
}

/** Refuses a workspace package the SDK must not carry, naming it and why. */
function checkBundleable(name, folder, requiredBy) {
  const manifest = readJson(path.join(folder, 'package.json'));
  const project = readJson(path.join(folder, 'project.json'));
  const scopes = (project.tags ?? []).filter((tag) => tag.startsWith('scope:'));
  const where = `${name} (required by ${requiredBy})`;
  if (!(project.tags ?? []).includes('type:lib')) fail(`${where} is not a library`);
  if (!scopes.every((scope) => bundleableScopes.has(scope)) || scopes.length === 0) {
    fail(
      `${where} has ${scopes.join(', ') || 'no scope'}; the SDK bundles only shared and client libraries`,
    );
  }
  if (existsSync(path.join(folder, 'binding.gyp')) || manifest.scripts?.['build:native']) {
    fail(`${where} builds a native addon in the workspace, which the SDK must not need`);
  }
}

/**
 * The SDK's dependency closure: the workspace packages it bundles (the SDK first) and the
 * third-party packages with the one version the workspace pins for each.
 */
function dependencyClosure(packages) {
  const bundled = [];
  const thirdParty = new Map();
  const versionOwner = new Map();
  const pending = [{ name: sdkPackageName, requiredBy: 'the pack' }];
  while (pending.length > 0) {
    const { name, requiredBy } = pending.shift();
    if (bundled.includes(name)) continue;
    const folder = packages.get(name);
    if (folder === undefined) fail(`${name} is not a workspace package`);
    if (name !== sdkPackageName) checkBundleable(name, folder, requiredBy);
    bundled.push(name);
    const manifest = readJson(path.join(folder, 'package.json'));
    for (const [dependency, version] of Object.entries(manifest.dependencies ?? {})) {
      if (packages.has(dependency)) {
        pending.push({ name: dependency, requiredBy: name });
      } else if (thirdParty.has(dependency) && thirdParty.get(dependency) !== version) {
        fail(
          `${dependency} is pinned at ${thirdParty.get(dependency)} by ` +
            `${versionOwner.get(dependency)} and at ${version} by ${name}; pin one version`,
        );
      } else {
        thirdParty.set(dependency, version);
        versionOwner.set(dependency, name);
      }
    }
  }
  return { bundled, thirdParty: new Map([...thirdParty].sort(([a], [b]) => a.localeCompare(b))) };
}

/** An exports map without the workspace-only `spool-source` condition, recursively. */
function withoutSourceCondition(exportsValue) {
  if (typeof exportsValue !== 'object' || exportsValue === null) return exportsValue;
  return Object.fromEntries(
    Object.entries(exportsValue)
      .filter(([condition]) => condition !== 'spool-source')
      .map(([key, value]) => [key, withoutSourceCondition(value)]),
  );
}

/** Fields of a workspace manifest that only the workspace uses. */
const workspaceOnlyFields = ['private', 'scripts', 'devDependencies', 'files'];

/**
 * The published form of a workspace manifest: no private flag, scripts or source condition, and
 * no testing entry (`./testing`: test code, left out of the tarball).
 */
function stagedManifest(manifest) {
  const exports = withoutSourceCondition(manifest.exports);
  if (typeof exports === 'object' && exports !== null) delete exports['./testing'];
  const staged = { ...manifest, exports };
  for (const field of workspaceOnlyFields) delete staged[field];
  return staged;
}

function copyBuilt(folder, packageName, destination) {
  const dist = path.join(folder, 'dist');
  if (!existsSync(path.join(dist, 'index.js')) || !existsSync(path.join(dist, 'index.d.ts'))) {
    fail(`${packageName} has no built dist/index.js and index.d.ts; build it (npm run build)`);
  }
  cpSync(dist, path.join(destination, 'dist'), {
    recursive: true,
    filter: (source) =>
      !source.endsWith('.tsbuildinfo') &&
      !source.endsWith('.map') &&
      !/\.spec\.(js|d\.ts)$/.test(source) &&
      !/[\\/]dist[\\/]testing([\\/]|$)/.test(source),
  });
  for (const extra of runtimeExtras[packageName] ?? []) {
    const from = path.join(folder, extra);
    if (!existsSync(from)) fail(`${packageName}: ${extra} is missing`);
    mkdirSync(path.dirname(path.join(destination, extra)), { recursive: true });
    cpSync(from, path.join(destination, extra));
  }
}

function* filesUnder(folder) {
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const file = path.join(folder, entry.name);
    if (entry.isDirectory()) yield* filesUnder(file);
    else yield file;
  }
}

function resolvesToFile(base) {
  for (const candidate of [base, `${base}.js`, path.join(base, 'index.js')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return true;
  }
  return false;
}

/** Every require() in a staged package's JavaScript names a staged file or a declared package. */
function checkRequires(packageFolder, manifest) {
  const declared = new Set(Object.keys(manifest.dependencies ?? {}));
  const builtins = new Set(builtinModules);
  for (const file of filesUnder(path.join(packageFolder, 'dist'))) {
    if (!file.endsWith('.js')) continue;
    const source = readFileSync(file, 'utf8');
    for (const match of source.matchAll(/(?<![.\w$])require\(\s*(["'])([^"']+)\1\s*\)/g)) {
      const specifier = match[2];
      const where = `${path.relative(packageFolder, file)} of ${manifest.name}`;
      if (specifier.startsWith('.')) {
        if (!resolvesToFile(path.resolve(path.dirname(file), specifier))) {
          fail(`${where} requires ${specifier}, which is not in the package`);
        }
        continue;
      }
      if (specifier.startsWith('node:') || builtins.has(specifier)) continue;
      const packageName = specifier.startsWith('@')
        ? specifier.split('/').slice(0, 2).join('/')
        : specifier.split('/')[0];
      if (!declared.has(packageName)) {
        fail(`${where} requires ${specifier}, which ${manifest.name} does not declare`);
      }
    }
  }
}

/**
 * Loads the staged SDK with require() and with import(), from inside the workspace so that its
 * third-party dependencies resolve from the workspace's node_modules, and compares the names.
 */
function checkLoads(stagedPackage) {
  const entry = path.join(stagedPackage, 'dist', 'index.js');
  const probe = `
    const { pathToFileURL } = require('node:url');
    const required = Object.keys(require(${JSON.stringify(entry)})).sort();
    import(pathToFileURL(${JSON.stringify(entry)}).href).then((imported) => {
      const names = Object.keys(imported).filter((name) => name !== 'default').sort();
      const missing = required.filter((name) => !names.includes(name));
      if (!required.includes('Spool') || missing.length > 0) {
        console.error('named ES module exports missing: ' + (missing.join(', ') || 'Spool'));
        process.exit(1);
      }
    });`;
  run(process.execPath, ['-e', probe], { cwd: stagedPackage });
}

function sdkManifest(clientManifest, bundled, thirdParty, packages) {
  const rootManifest = readJson(path.join(workspaceRoot, 'package.json'));
  const dependencies = Object.fromEntries(thirdParty);
  for (const name of bundled.slice(1)) {
    dependencies[name] = readJson(path.join(packages.get(name), 'package.json')).version;
  }
  const staged = stagedManifest(clientManifest);
  return {
    name: staged.name,
    version: staged.version,
    description: 'The TypeScript SDK of Spool, a distributed, partitioned, replicated commit log.',
    ...staged,
    engines: rootManifest.engines,
    files: ['dist'],
    dependencies: Object.fromEntries(
      Object.entries(dependencies).sort(([a], [b]) => a.localeCompare(b)),
    ),
    bundleDependencies: bundled.slice(1),
  };
}

function main() {
  const { values } = parseArgs({
    options: {
      out: { type: 'string', default: path.join(workspaceRoot, 'dist', 'sdk') },
      'skip-build': { type: 'boolean', default: false },
    },
  });
  const out = path.resolve(values.out);
  const packages = workspacePackages();
  if (!values['skip-build']) {
    run('npx', ['nx', 'run', 'client:build', '--output-style=static'], {
      cwd: workspaceRoot,
      env: { ...process.env, NX_DAEMON: 'false', NX_TUI: 'false' },
    });
  }
  const { bundled, thirdParty } = dependencyClosure(packages);

  // Staged inside the workspace (dist/ is git-ignored) so the load check resolves third-party
  // packages from the workspace's node_modules; npm treats the folder as a project of its own.
  const stage = path.join(workspaceRoot, 'dist', 'sdk-stage');
  rmSync(stage, { recursive: true, force: true });
  const stagedSdk = path.join(stage, 'package');
  for (const name of bundled) {
    const destination =
      name === sdkPackageName ? stagedSdk : path.join(stagedSdk, 'node_modules', name);
    const manifest = readJson(path.join(packages.get(name), 'package.json'));
    const staged =
      name === sdkPackageName
        ? sdkManifest(manifest, bundled, thirdParty, packages)
        : stagedManifest(manifest);
    mkdirSync(destination, { recursive: true });
    copyBuilt(packages.get(name), name, destination);
    writeFileSync(path.join(destination, 'package.json'), `${JSON.stringify(staged, null, 2)}\n`);
    checkRequires(destination, staged);
  }
  checkLoads(stagedSdk);

  mkdirSync(out, { recursive: true });
  const packed = spawnSync('npm', ['pack', '--json', '--pack-destination', out], {
    cwd: stagedSdk,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (packed.status !== 0) fail(`npm pack exited with ${packed.status}`);
  const [report] = JSON.parse(packed.stdout);
  const tarball = path.join(out, report.filename);
  if (!existsSync(tarball)) fail(`npm pack reported ${report.filename}, which is not in ${out}`);
  const bundledFiles = report.files.filter((file) => file.path.startsWith('node_modules/'));
  if (bundledFiles.length === 0) fail('npm pack left the bundled workspace packages out');
  rmSync(stage, { recursive: true, force: true });
  process.stdout.write(
    `pack-sdk: ${report.name}@${report.version}, ${report.entryCount} files, ` +
      `${report.size} bytes; bundled ${bundled.slice(1).join(', ')}\n${tarball}\n`,
  );
}

main();

// Builds the native addon (binding.gyp: sendfile(2) and a hardware CRC-32C) with the node-gyp
// that ships inside npm and the headers that ship with this Node, so nothing is downloaded:
// `npx node-gyp` would fetch node-gyp from the registry, and node-gyp without --nodedir would
// fetch headers.
//
// A failed or skipped build is not an install failure. The segment store then moves fetch
// bytes through its copy path and checks batches with @spool/record-batch's own CRC-32C, and says
// so in log lines at start-up. This script prints one line either way; the compiler's output of
// a failed build goes to build/build-native.log.
'use strict';
/* eslint-disable @typescript-eslint/no-require-imports -- a plain CommonJS script run by node */

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const packageRoot = path.resolve(__dirname, '..');
const addonPath = path.join(packageRoot, 'build', 'Release', 'segment_store_native.node');
const logPath = path.join(packageRoot, 'build', 'build-native.log');

function warn(reason) {
  console.warn(
    `[segment-store] native addon not built (${reason}); the copy path and the CRC-32C of ` +
      '@spool/record-batch will be used.',
  );
}

// npm exports the path of its bundled node-gyp to every script it runs; outside npm, look in
// npm's own install, which sits next to this node binary in a standard layout.
function findNodeGyp() {
  const candidates = [];
  if (process.env.npm_config_node_gyp) candidates.push(process.env.npm_config_node_gyp);
  const npmRoots = [path.join(path.dirname(process.execPath), '..', 'lib', 'node_modules', 'npm')];
  if (process.env.npm_execpath)
    npmRoots.unshift(path.resolve(process.env.npm_execpath, '..', '..'));
  for (const npmRoot of npmRoots) {
    try {
      candidates.push(require.resolve('node-gyp/bin/node-gyp.js', { paths: [npmRoot] }));
    } catch {
      // Not this npm install layout; try the next one.
    }
  }
  return candidates.find((candidate) => fs.existsSync(candidate));
}

// The headers of this very Node: /usr/bin/node → /usr/include/node/node_api.h.
function findNodeDir() {
  const nodeDir = path.resolve(path.dirname(process.execPath), '..');
  const header = path.join(nodeDir, 'include', 'node', 'node_api.h');
  return fs.existsSync(header) ? nodeDir : undefined;
}

function main() {
  if (process.platform !== 'linux') {
    return warn(`the addon is Linux-only (sendfile(2)), this is ${process.platform}`);
  }
  const nodeGyp = findNodeGyp();
  if (nodeGyp === undefined) return warn("npm's bundled node-gyp was not found");
  const nodeDir = findNodeDir();
  if (nodeDir === undefined) {
    return warn(`no Node headers in ${path.resolve(path.dirname(process.execPath), '..')}`);
  }

  const result = spawnSync(process.execPath, [nodeGyp, 'rebuild', `--nodedir=${nodeDir}`], {
    cwd: packageRoot,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status === 0 && fs.existsSync(addonPath)) {
    console.log(`[segment-store] native addon built: ${addonPath}`);
    return undefined;
  }
  const output = [result.stdout, result.stderr, result.error].filter(Boolean).join('\n');
  fs.mkdirSync(path.dirname(logPath), { recursive: true });
  fs.writeFileSync(logPath, output);
  return warn(`node-gyp exited with status ${result.status}, output in ${logPath}`);
}

main();

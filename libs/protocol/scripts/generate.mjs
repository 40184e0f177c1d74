#!/usr/bin/env node
// Generates libs/protocol/src/generated from proto/ with buf and the local ts-proto plugin
// (no network), plus the FileDescriptorSet that servers load for gRPC reflection.
//   node generate.mjs          write the generated code
//   node generate.mjs --check  fail if the committed generated code is stale
import { execFileSync } from 'node:child_process';
import {
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  cpSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const protocolRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const workspaceRoot = path.resolve(protocolRoot, '../..');
const protoRoot = path.join(workspaceRoot, 'proto');
const generatedRoot = path.join(protocolRoot, 'src/generated');
const buf = path.join(workspaceRoot, 'node_modules/.bin/buf');
const plugin = path.join(workspaceRoot, 'node_modules/.bin/protoc-gen-ts_proto');
const check = process.argv.includes('--check');

const outputRoot = mkdtempSync(path.join(tmpdir(), 'spool-protocol-'));
try {
  const template = {
    version: 'v2',
    plugins: [
      {
        local: plugin,
        out: outputRoot,
        opt: [
          'outputServices=grpc-js',
          'forceLong=bigint',
          'env=node',
          'esModuleInterop=true',
          'useOptionals=none',
        ],
      },
    ],
  };
  execFileSync(buf, ['lint'], { cwd: protoRoot, stdio: 'inherit' });
  execFileSync(buf, ['generate', '--template', JSON.stringify(template)], {
    cwd: protoRoot,
    stdio: 'inherit',
  });
  execFileSync(buf, ['build', '-o', path.join(outputRoot, 'spool.binpb')], {
    cwd: protoRoot,
    stdio: 'inherit',
  });

  if (check) {
    const stale = compareTrees(outputRoot, generatedRoot);
    if (stale.length > 0) {
      console.error(
        `generated protocol code is stale (run \`npm run generate\`): ${stale.join(', ')}`,
      );
      process.exit(1);
    }
    console.log('generated protocol code is up to date');
  } else {
    rmSync(generatedRoot, { recursive: true, force: true });
    cpSync(outputRoot, generatedRoot, { recursive: true });
    writeFileSync(path.join(generatedRoot, '.gitattributes'), '* linguist-generated=true\n');
    console.log(`generated ${generatedRoot}`);
  }
} finally {
  rmSync(outputRoot, { recursive: true, force: true });
}

function listFiles(root) {
  const files = [];
  const walk = (directory) => {
    for (const name of readdirSync(directory)) {
      const full = path.join(directory, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name !== '.gitattributes') files.push(path.relative(root, full));
    }
  };
  walk(root);
  return files.sort();
}

function compareTrees(expectedRoot, actualRoot) {
  const expected = listFiles(expectedRoot);
  let actual = [];
  try {
    actual = listFiles(actualRoot);
  } catch {
    return ['(missing folder)'];
  }
  const differences = new Set([
    ...expected.filter((file) => !actual.includes(file)),
    ...actual.filter((file) => !expected.includes(file)),
  ]);
  for (const file of expected.filter((name) => actual.includes(name))) {
    const left = readFileSync(path.join(expectedRoot, file));
    const right = readFileSync(path.join(actualRoot, file));
    if (!left.equals(right)) differences.add(file);
  }
  return [...differences];
}

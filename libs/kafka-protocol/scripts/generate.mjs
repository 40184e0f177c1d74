#!/usr/bin/env node
// Generates libs/kafka-protocol/src/generated from the Kafka message schemas committed in
// libs/kafka-protocol/schemas (extracted from the pinned kafka-clients jar by
// test/support/ensure-kafka-clients.sh --extract-schemas). The generator is this package's own
// TypeScript (generator/), compiled here with the workspace's TypeScript; no network.
//   node generate.mjs          write the generated code
//   node generate.mjs --check  fail if the committed generated code, or a schema, is stale
import { createHash } from 'node:crypto';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const schemasRoot = path.join(packageRoot, 'schemas');
const generatedRoot = path.join(packageRoot, 'src/generated');
const check = process.argv.includes('--check');
const require = createRequire(import.meta.url);
const ts = require('typescript');

const workRoot = mkdtempSync(path.join(tmpdir(), 'spool-kafka-protocol-'));
try {
  checkSchemaDigest();
  // The generator and the schema model it shares with the testing entry (src/message-spec.ts),
  // compiled to CommonJS in the same layout so that their relative imports hold.
  const sources = [
    ...readdirSync(path.join(packageRoot, 'generator')).map((name) => path.join('generator', name)),
    path.join('src', 'message-spec.ts'),
  ].filter((name) => name.endsWith('.ts') && !name.endsWith('.spec.ts'));
  for (const relative of sources) {
    const source = readFileSync(path.join(packageRoot, relative), 'utf8');
    const { outputText } = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
      fileName: relative,
    });
    const output = path.join(workRoot, relative.replace(/\.ts$/, '.js'));
    mkdirSync(path.dirname(output), { recursive: true });
    writeFileSync(output, outputText);
  }
  const outputRoot = path.join(workRoot, 'generated');
  require(path.join(workRoot, 'generator', 'generate.js')).generate(schemasRoot, outputRoot);
  writeFileSync(path.join(outputRoot, '.gitattributes'), '* linguist-generated=true\n');

  if (check) {
    const stale = compareTrees(outputRoot, generatedRoot);
    if (stale.length > 0) {
      console.error(
        `generated Kafka protocol code is stale (run \`npx nx run kafka-protocol:generate\`): ${stale.join(', ')}`,
      );
      process.exit(1);
    }
    console.log('generated Kafka protocol code is up to date');
  } else {
    rmSync(generatedRoot, { recursive: true, force: true });
    cpSync(outputRoot, generatedRoot, { recursive: true });
    console.log(`generated ${generatedRoot}`);
  }
} finally {
  rmSync(workRoot, { recursive: true, force: true });
}

/**
 * The committed schemas must be exactly those of the pinned jar: their digest (SHA-256 over each
 * file's name and SHA-256, in name order) is pinned in schemas/PINNED beside the jar's.
 */
function checkSchemaDigest() {
  const pinned = readFileSync(path.join(schemasRoot, 'PINNED'), 'utf8');
  const expected = /^schemas-sha256=([0-9a-f]{64})$/m.exec(pinned)?.[1];
  const actual = schemaDigest(schemasRoot);
  if (expected !== actual) {
    console.error(
      `libs/kafka-protocol/schemas differ from the pinned jar's (digest ${actual}, pinned ${expected}); ` +
        're-extract them with bash test/support/ensure-kafka-clients.sh --extract-schemas',
    );
    process.exit(1);
  }
}

export function schemaDigest(root) {
  const hash = createHash('sha256');
  for (const name of readdirSync(root)
    .filter((file) => file.endsWith('.json'))
    .sort()) {
    const fileHash = createHash('sha256')
      .update(readFileSync(path.join(root, name)))
      .digest('hex');
    hash.update(`${fileHash}  ${name}\n`);
  }
  return hash.digest('hex');
}

function listFiles(root) {
  const files = [];
  const walk = (directory) => {
    for (const name of readdirSync(directory)) {
      const full = path.join(directory, name);
      if (statSync(full).isDirectory()) walk(full);
      else files.push(path.relative(root, full));
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
    if (
      !readFileSync(path.join(expectedRoot, file)).equals(readFileSync(path.join(actualRoot, file)))
    ) {
      differences.add(file);
    }
  }
  return [...differences];
}

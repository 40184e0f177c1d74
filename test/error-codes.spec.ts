// Proves every error code the services, the SDK and the CLI raise is in the one error catalog
// (@spool/errors), so none is retriable by a table of its own or unknown to a Kafka client: it
// reads the sources of every project and checks each code literal that opens an error
// (`new SpoolError('X'`, `clientError('X'`, a `code: 'X'` answer) against the catalog.
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { errorCatalog, isErrorCode } from '@spool/errors';
import { describe, expect, it } from 'vitest';
import { workspaceRoot } from './support/service-process';

function sourceFiles(folder: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const entryPath = path.join(folder, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'generated' && entry.name !== 'testing') {
        found.push(...sourceFiles(entryPath));
      }
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts')) {
      found.push(entryPath);
    }
  }
  return found;
}

const errorOpenings = [
  /new SpoolError\(\s*'([A-Z_]+)'/g,
  /clientError\(\s*'([A-Z_]+)'/g,
  /super\(\s*'([A-Z_]+)'/g,
  /\bcode: '([A-Z_]+)'/g,
];

function codesRaised(): Map<string, string> {
  const firstFileOf = new Map<string, string>();
  for (const group of ['apps', 'libs']) {
    for (const project of readdirSync(path.join(workspaceRoot, group))) {
      const sources = path.join(workspaceRoot, group, project, 'src');
      for (const file of sourceFiles(sources)) {
        const text = readFileSync(file, 'utf8');
        for (const pattern of errorOpenings) {
          for (const match of text.matchAll(pattern)) {
            if (!firstFileOf.has(match[1]!)) {
              firstFileOf.set(match[1]!, path.relative(workspaceRoot, file));
            }
          }
        }
      }
    }
  }
  return firstFileOf;
}

describe('error codes', () => {
  it('raises only codes of the catalog', () => {
    const raised = codesRaised();
    // The scan must find the codes it is meant to check, or it proves nothing.
    expect(raised.size).toBeGreaterThan(30);
    expect(raised.has('NOT_CONTROLLER')).toBe(true);
    const unknown = [...raised]
      .filter(([code]) => !isErrorCode(code))
      .map(([code, file]) => `${code} (${file})`);
    expect(unknown).toEqual([]);
  });

  it("keeps Kafka's classification where the services once disagreed", () => {
    expect(errorCatalog.UNKNOWN_TOPIC_OR_PARTITION.retriable).toBe(true);
    expect(errorCatalog.FENCED_LEADER_EPOCH.retriable).toBe(true);
  });
});

// Proves the local backend: it keeps the MetadataStore contract (the shared suite), survives a
// SIGKILL in the middle of writes with every resolved write intact (a child process writes, the
// test kills it and reopens the file), cuts and reports a torn or bad-CRC tail, compacts its
// journal into a snapshot, bounds its watch history, drops lease-bound keys of a crashed run,
// and refuses a second owner with METADATA_STORE_LOCKED.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { isMetadataStoreError } from './errors';
import { journalMagic } from './local-journal';
import { LocalMetadataStore, type LocalMetadataStoreOptions } from './local-metadata-store';
import { describeMetadataStoreContract } from './testing/metadata-store.contract';

const temporaryRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-metadata-local-'));
afterAll(() => fs.rmSync(temporaryRoot, { recursive: true, force: true }));

function newJournalPath(): string {
  return path.join(fs.mkdtempSync(path.join(temporaryRoot, 'store-')), 'metadata.journal');
}

describeMetadataStoreContract('local', async () => {
  const journalPath = newJournalPath();
  return {
    open: () => LocalMetadataStore.open({ path: journalPath }),
    dispose: async () => fs.rmSync(path.dirname(journalPath), { recursive: true, force: true }),
  };
});

describe('LocalMetadataStore', () => {
  const stores: LocalMetadataStore[] = [];

  async function open(options: LocalMetadataStoreOptions): Promise<LocalMetadataStore> {
    const store = await LocalMetadataStore.open(options);
    stores.push(store);
    return store;
  }

  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
  });

  it('keeps every write that resolved when its process is SIGKILLed mid-write', async () => {
    const journalPath = newJournalPath();
    const childScript = path.join(__dirname, 'local-metadata-store.kill-child.mjs');
    const distIndex = path.join(__dirname, '..', 'dist', 'index.js');
    expect(fs.existsSync(distIndex), 'build first: npx nx run metadata:build').toBe(true);
    const child = spawn(process.execPath, [childScript, journalPath], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const acknowledged = new Map<string, bigint>();
    let output = '';
    let errors = '';
    child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.once('exit', (_code, signal) => resolve(signal)),
    );
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`child wrote too little: ${acknowledged.size}\n${errors}`)),
        20_000,
      );
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const lines = output.split('\n');
        output = lines.pop()!;
        for (const line of lines) {
          const [key, revision] = line.split(' ');
          if (revision !== undefined) acknowledged.set(key!, BigInt(revision));
        }
        if (acknowledged.size >= 300) {
          clearTimeout(timer);
          resolve();
        }
      });
      void exited.then(() => reject(new Error(`child exited early:\n${errors}`)));
    });
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');

    const store = await open({ path: journalPath });
    for (const [key, revision] of acknowledged) {
      const keyValue = await store.get(key);
      expect(keyValue?.modRevision, key).toBe(revision);
      expect(keyValue?.value.toString()).toBe(`value of ${key}`);
    }
    // The crashed process's lease died with it, and so did its key.
    expect(await store.get('/lease-bound')).toBeUndefined();
    expect(store.recoveryReport.leaseKeysDeleted).toBe(1);
    const { entries, revision } = await store.getPrefix('/keys/');
    expect(entries.length).toBeGreaterThanOrEqual(acknowledged.size);
    expect(revision).toBeGreaterThan([...acknowledged.values()].reduce((a, b) => (a > b ? a : b)));
  });

  it('reopens with its keys and revisions, and replays watches from the journal', async () => {
    const journalPath = newJournalPath();
    const first = await open({ path: journalPath });
    const start = (await first.getPrefix('/')).revision;
    await first.put('/a', Buffer.from('1'));
    const second = await first.put('/a', Buffer.from('2'));
    const third = await first.put('/b', Buffer.from('3'));
    await first.close();

    const reopened = await open({ path: journalPath });
    expect(reopened.recoveryReport).toMatchObject({
      created: false,
      bytesTruncated: 0,
      recordsValid: 4,
    });
    expect(await reopened.get('/a')).toMatchObject({ modRevision: second, version: 2n });
    expect(await reopened.put('/c', Buffer.from('4'))).toBe(third + 1n);
    const revisions: bigint[] = [];
    await reopened.watchPrefix('/', start, {
      onEvents: (_events, revision) => revisions.push(revision),
      onError: (error) => {
        throw error;
      },
    });
    await expect.poll(() => revisions.length === 4).toBe(true);
    expect(revisions).toEqual([start + 1n, second, third, third + 1n]);
  });

  it('cuts a torn tail, reports it, and keeps every complete record', async () => {
    const journalPath = newJournalPath();
    const store = await open({ path: journalPath });
    await store.put('/kept', Buffer.from('yes'));
    await store.close();
    const goodSizeBytes = fs.statSync(journalPath).size;
    // A record header promising 100 bytes, followed by only 10: a crash mid-append.
    const torn = Buffer.alloc(18);
    torn.writeUInt32BE(100, 0);
    fs.appendFileSync(journalPath, torn);

    const reopened = await open({ path: journalPath });
    expect(reopened.recoveryReport).toMatchObject({
      truncatedAtPosition: goodSizeBytes,
      bytesTruncated: 18,
      recordsValid: 2,
    });
    expect(fs.statSync(journalPath).size).toBe(goodSizeBytes);
    expect((await reopened.get('/kept'))?.value.toString()).toBe('yes');
    await reopened.put('/after', Buffer.from('ok'));
    await reopened.close();
    const again = await open({ path: journalPath });
    expect(again.recoveryReport.bytesTruncated).toBe(0);
    expect(await again.get('/after')).toBeDefined();
  });

  it('drops a last record whose CRC fails, and a zero-filled tail', async () => {
    const journalPath = newJournalPath();
    const store = await open({ path: journalPath });
    await store.put('/first', Buffer.from('1'));
    await store.close();
    const sizeBeforeLast = fs.statSync(journalPath).size;
    const reopened = await open({ path: journalPath });
    await reopened.put('/second', Buffer.from('2'));
    await reopened.close();
    const bytes = fs.readFileSync(journalPath);
    bytes[bytes.length - 3]! ^= 0xff;
    fs.writeFileSync(journalPath, Buffer.concat([bytes, Buffer.alloc(4096)]));

    const recovered = await open({ path: journalPath });
    expect(recovered.recoveryReport).toMatchObject({
      truncatedAtPosition: sizeBeforeLast,
      bytesTruncated: bytes.length - sizeBeforeLast + 4096,
    });
    expect(await recovered.get('/first')).toBeDefined();
    expect(await recovered.get('/second')).toBeUndefined();
  });

  it('refuses a file that is not a metadata journal with METADATA_STORE_CORRUPT', async () => {
    const journalPath = newJournalPath();
    fs.writeFileSync(journalPath, 'not a journal at all');
    const error = await LocalMetadataStore.open({ path: journalPath }).catch((e: unknown) => e);
    expect(isMetadataStoreError(error, 'METADATA_STORE_CORRUPT')).toBe(true);
    expect(String(error)).toContain(journalPath);
    // The lock was released: once the file is fixed, the store opens.
    fs.rmSync(journalPath);
    await open({ path: journalPath });
  });

  it('compacts its journal into a snapshot past the bound, and reopens from it', async () => {
    const journalPath = newJournalPath();
    const store = await open({ path: journalPath, journalAppendedBytesMax: 4096 });
    for (let index = 0; index < 200; index++) {
      await store.put(`/key/${index % 20}`, Buffer.from(`value ${index}`));
    }
    const { revision } = await store.getPrefix('/');
    expect(fs.statSync(journalPath).size).toBeLessThan(3 * 4096);
    expect(fs.readFileSync(journalPath).subarray(0, 8)).toEqual(journalMagic);
    await store.close();

    const reopened = await open({ path: journalPath, journalAppendedBytesMax: 4096 });
    expect(reopened.recoveryReport.snapshotRevision).toBeGreaterThan(1n);
    expect((await reopened.getPrefix('/')).revision).toBe(revision);
    expect(await reopened.get('/key/19')).toMatchObject({ version: 10n, modRevision: revision });
    // History before the snapshot is gone after a restart.
    const errors: Error[] = [];
    await reopened.watchPrefix('/', 1n, {
      onEvents: () => undefined,
      onError: (e) => errors.push(e),
    });
    await expect.poll(() => errors.length === 1).toBe(true);
    expect(errors[0]).toMatchObject({ code: 'WATCH_COMPACTED' });
  });

  it('keeps a bounded watch history', async () => {
    const store = await open({ path: newJournalPath(), watchHistoryRevisionsMax: 5 });
    let last = 0n;
    for (let index = 0; index < 10; index++) last = await store.put('/k', Buffer.from(`${index}`));
    const errors: Error[] = [];
    await store.watchPrefix('/', last - 6n, {
      onEvents: () => undefined,
      onError: (e) => errors.push(e),
    });
    await expect.poll(() => errors.length === 1).toBe(true);
    expect(errors[0]).toMatchObject({ code: 'WATCH_COMPACTED', compactRevision: last - 4n });
    const revisions: bigint[] = [];
    await store.watchPrefix('/', last - 5n, {
      onEvents: (_events, revision) => revisions.push(revision),
      onError: (error) => errors.push(error),
    });
    await expect.poll(() => revisions.length === 5).toBe(true);
    expect(revisions[0]).toBe(last - 4n);
  });

  it('deletes keys bound to leases of a run that crashed', async () => {
    const journalPath = newJournalPath();
    const store = await open({ path: journalPath });
    const lease = await store.grantLease(10_000);
    await store.put('/broker/1', Buffer.from('up'), { lease: lease.id });
    await store.put('/topic', Buffer.from('kept'));
    // The file as a SIGKILL would leave it: the store is still open, its lease alive.
    const crashedPath = newJournalPath();
    fs.copyFileSync(journalPath, crashedPath);

    const recovered = await open({ path: crashedPath });
    expect(recovered.recoveryReport.leaseKeysDeleted).toBe(1);
    expect(await recovered.get('/broker/1')).toBeUndefined();
    expect(await recovered.get('/topic')).toBeDefined();
    expect(await store.get('/broker/1')).toBeDefined();
  });

  it('refuses a second owner with METADATA_STORE_LOCKED and takes over a stale lock', async () => {
    const journalPath = newJournalPath();
    const store = await open({ path: journalPath });
    const sameProcess = await LocalMetadataStore.open({ path: journalPath }).catch(
      (e: unknown) => e,
    );
    expect(isMetadataStoreError(sameProcess, 'METADATA_STORE_LOCKED')).toBe(true);
    await store.close();
    expect(fs.existsSync(`${journalPath}.lock`)).toBe(false);

    // Another live process holds it (the test runner that started this worker).
    fs.writeFileSync(`${journalPath}.lock`, `${process.ppid}\n`);
    const otherProcess = await LocalMetadataStore.open({ path: journalPath }).catch(
      (e: unknown) => e,
    );
    expect(isMetadataStoreError(otherProcess, 'METADATA_STORE_LOCKED')).toBe(true);
    expect(String(otherProcess)).toContain(`pid ${process.ppid}`);

    // Its owner died without removing it.
    fs.writeFileSync(`${journalPath}.lock`, `${await deadPid()}\n`);
    await open({ path: journalPath });
    expect(fs.readFileSync(`${journalPath}.lock`, 'utf8')).toBe(`${process.pid}\n`);
  });
});

async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

// Proves the factory: it opens the backend the config names and refuses a bad config at once,
// with INVALID_CONFIG and a message that names the setting and the bad value.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMetadataStore, type MetadataStoreConfig } from './create-metadata-store';
import { LocalMetadataStore } from './local-metadata-store';

const temporaryRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-metadata-factory-'));
afterAll(() => fs.rmSync(temporaryRoot, { recursive: true, force: true }));

describe('createMetadataStore', () => {
  it('opens a local store at the configured path, creating its folder', async () => {
    const journalPath = path.join(temporaryRoot, 'nested', 'metadata.journal');
    const store = await createMetadataStore({ backend: 'local', path: journalPath });
    try {
      expect(store).toBeInstanceOf(LocalMetadataStore);
      await store.put('/k', Buffer.from('v'));
      expect(fs.existsSync(journalPath)).toBe(true);
    } finally {
      await store.close();
    }
  });

  it.each([
    [{ backend: 'local', path: '' }, /metadata path/],
    [{ backend: 'etcd', endpoints: [] }, /metadata endpoints/],
    [{ backend: 'etcd', endpoints: ['not a url'] }, /not a url/],
    [{ backend: 'zookeeper' }, /"zookeeper"/],
  ])('refuses %j', async (config, message) => {
    const error = await createMetadataStore(config as unknown as MetadataStoreConfig).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringMatching(message),
    });
  });
});

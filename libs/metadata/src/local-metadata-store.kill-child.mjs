// Child process of local-metadata-store.spec.ts: opens the local store named by argv[2], binds one
// key to a lease, then writes keys from four concurrent writers as fast as the disk allows and
// prints "<key> <revision>" for every write that resolved, until the parent SIGKILLs it. A tiny
// compaction bound makes snapshot renames happen during the writes too. Loads the built package.
import metadata from '@spool/metadata';

const store = await metadata.LocalMetadataStore.open({
  path: process.argv[2],
  journalAppendedBytesMax: 8 * 1024,
});
const lease = await store.grantLease(60_000);
await store.put('/lease-bound', Buffer.from('gone after a crash'), { lease: lease.id });
process.stdout.write('ready\n');

let next = 0;
async function writer() {
  for (;;) {
    const key = `/keys/${String(next++).padStart(8, '0')}`;
    const revision = await store.put(key, Buffer.from(`value of ${key}`));
    process.stdout.write(`${key} ${revision}\n`);
  }
}
await Promise.all([writer(), writer(), writer(), writer()]);

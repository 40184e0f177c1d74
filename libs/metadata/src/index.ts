// The metadata store the controller keeps cluster state in (etcd in production, a local durable
// file on one machine), and the layout of that state. The public API, hand-picked: add new
// exports to the group they belong to, and keep everything else internal to the library.

// The interface both backends implement
export type {
  CampaignOptions,
  Compare,
  KeyValue,
  Leadership,
  Lease,
  MetadataStore,
  Operation,
  Transaction,
  TransactionResult,
  Watch,
  WatchEvent,
  WatchHandlers,
} from './metadata-store';
export { createMetadataStore, type MetadataStoreConfig } from './create-metadata-store';

// Key layout
export { MetadataKeys } from './metadata-keys';

// Errors
export {
  MetadataStoreError,
  WatchCompactedError,
  isMetadataStoreError,
  type MetadataStoreErrorCode,
} from './errors';

// Backends
export {
  LocalMetadataStore,
  journalAppendedBytesMaxDefault,
  watchHistoryRevisionsMaxDefault,
  type LocalMetadataStoreOptions,
  type LocalRecoveryReport,
} from './local-metadata-store';
export {
  EtcdMetadataStore,
  requestTimeoutMsDefault,
  type EtcdMetadataStoreOptions,
} from './etcd-metadata-store';

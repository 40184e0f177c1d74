// The public API of @spool/segment-store, hand-picked: add new exports to the group they
// belong to, and keep everything else internal to the library.

// Errors
export {
  FileTruncatedError,
  OffsetOutOfRangeError,
  storageError,
  SegmentStoreError,
  type SegmentStoreErrorCode,
  type SegmentStoreErrorOptions,
} from './errors';

// Slices and the fetch path
export type { FileSlice, SegmentFileHandle } from './file-slice';
export {
  activeTransferPath,
  inlineCopyBytesMax,
  type TransferPath,
  writeTo,
  type WriteToOptions,
} from './file-records';
export { readSliceInto } from './slice-read';
export { isTransferPending, socketTransfersPendingMax } from './socket-transfer-queue';

// The partition log
export {
  cleanShutdownFile,
  highWatermarkCheckpointFile,
  leaderEpochCheckpointFile,
  legacyHighWatermarkFile,
  logStartOffsetCheckpointFile,
  partitionMetadataFile,
  recoveryPointCheckpointFile,
} from './log-files';
export {
  Log,
  type AppendOptions,
  type AppendResult,
  type ValidatedBatches,
  type LogOpenOptions,
  type LogReadResult,
  type ReadOptions,
  type RecoveryReport,
} from './log';
export {
  batchSizeBytesLimit,
  defaultLogConfig,
  logConfigFromTopicConfigs,
  resolveLogConfig,
  type CleanupPolicy,
  type LogConfig,
} from './log-config';
export { segmentFileName } from './log-segment';
export { readPartitionTopicId, writePartitionTopicId } from './partition-metadata-file';

// Log compaction: the cleaner and its per-directory checkpoint
export {
  type CleanerLog,
  type CleanerLogState,
  type CleanPassResult,
  LogCleaner,
  logCleanerSettingsDefault,
  type LogCleanerSettings,
  type LogCleanerStatistics,
} from './cleaner/log-cleaner';
export { CleanerCheckpoint, cleanerOffsetCheckpointFile } from './cleaner/cleaner-checkpoint';

// Idempotent producers: their state, kept in step with the log, and its snapshots
export {
  ProducerStateLog,
  type LeaderAppendOutcome,
  type LogDirGuard,
  type ProducerStateRebuildReport,
} from './producer-state/producer-state-log';
export {
  ProducerStateManager,
  producerStateSettingsDefault,
  type ProducerStateSettings,
} from './producer-state/producer-state-manager';
export { producerSnapshotFileName } from './producer-state/producer-state-snapshot';
export {
  highWatermarksCheckpointFile,
  type LoadedLog,
  LogDirectory,
  type LogDirectoryLoadReport,
  recoveryDidWork,
  recoveryPointCheckpointIntervalMs,
} from './log-directory';
export {
  FileHandleCache,
  type FileHandleCacheStatistics,
  logOpenFilesMaxDefault,
  logOpenFilesMaxMinimum,
} from './file-handle-cache';
export {
  type LogCorruption,
  logVerificationChunkBytesDefault,
  type LogVerificationOptions,
  type LogVerificationReport,
  verifyLog,
} from './log-verifier';
export { undefinedEpoch, undefinedEpochOffset, type EpochEntry } from './leader-epoch-cache';

// The names of the files in a partition log's folder; log.ts's header says what each holds and
// its crash story. Kept apart so the loader, the log and the data directory share them.

export const recoveryPointCheckpointFile = 'recovery-point-offset-checkpoint';
export const logStartOffsetCheckpointFile = 'log-start-offset-checkpoint';
export const leaderEpochCheckpointFile = 'leader-epoch-checkpoint';
export const cleanShutdownFile = '.clean-shutdown';
export const highWatermarkCheckpointFile = 'high-watermark-checkpoint';
/** The plain-text HW file of versions before the log owned its HW; read once, then removed. */
export const legacyHighWatermarkFile = 'high-watermark';
export const partitionMetadataFile = 'partition.metadata';

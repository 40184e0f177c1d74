import type { Logger, ServiceContext } from '@spool/common';
import { LogDirectory, type FileHandleCache } from '@spool/segment-store';
import { LogDirHealth } from './log-dir-health';
import type { storageNodeSettings } from './storage-node-service';

/**
 * Opens the node's data directory of logs and watches its health (Kafka's log dir failure
 * handling): while the directory is offline the node is not ready, and /readyz says why (a
 * Kubernetes pod shows it); it leads nothing and is in no ISR until the directory is writable
 * again. A background flush or checkpoint that fails reports to the health watch.
 */
export function openLogDirectory(
  context: ServiceContext<typeof storageNodeSettings>,
  options: {
    logger: Logger;
    files: FileHandleCache;
    /** The directory went offline or came back: the controller should hear at once. */
    onOfflineChange: () => void;
  },
): { logDirHealth: LogDirHealth; logDirectory: LogDirectory } {
  const { config, readiness } = context;
  let offlineCondition: string | undefined;
  const logDirHealth: LogDirHealth = new LogDirHealth({
    directory: config.dataDir,
    logger: options.logger.child({ component: 'log-dir' }),
    onChange: (offline) => {
      if (offlineCondition !== undefined) readiness.satisfy(offlineCondition);
      offlineCondition = offline
        ? `the data directory writable again (offline: ${logDirHealth.offlineReason})`
        : undefined;
      if (offlineCondition !== undefined) readiness.require(offlineCondition);
      options.onOfflineChange();
    },
  });
  context.onShutdown(async () => logDirHealth.stop());
  const logDirectory = LogDirectory.open(config.dataDir, {
    files: options.files,
    onBackgroundError: (error) => {
      options.logger.error({ err: error }, 'recovery point checkpoint failed');
      logDirHealth.report(error);
    },
  });
  return { logDirHealth, logDirectory };
}

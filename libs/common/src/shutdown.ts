import type { Logger } from './logger';

/**
 * Graceful shutdown. The first SIGTERM or SIGINT starts an orderly stop and the process exits 0
 * when it finishes (1 if a step failed); a second signal exits at once with 130, for the operator
 * who really means it.
 */
export type ShutdownStep = () => Promise<void>;

export async function runShutdownSteps(
  steps: readonly ShutdownStep[],
  deadlineMs: number,
  logger: Logger,
): Promise<void> {
  for (const step of steps) {
    const remainingMs = Math.max(1, deadlineMs - Date.now());
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timed-out'>((resolve) => {
      timer = setTimeout(() => resolve('timed-out'), remainingMs);
    });
    try {
      const outcome = await Promise.race([step().then(() => 'done' as const), timedOut]);
      if (outcome === 'timed-out')
        logger.warn({ remainingMs }, 'shutdown step did not finish in time');
    } catch (error) {
      logger.error({ err: error }, 'shutdown step failed');
    } finally {
      clearTimeout(timer);
    }
  }
}

export function installSignalHandlers(stop: () => Promise<void>, logger: Logger): void {
  let signalled = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (signalled) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(130);
    }
    signalled = true;
    logger.info({ signal }, 'shutdown requested');
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.fatal({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

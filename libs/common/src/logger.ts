import pino, { type Logger as PinoLogger } from 'pino';

/**
 * Structured JSON logs on stdout (pino): one object per line, so `spool dev`, kubectl and any log
 * shipper read them alike. Every module logs through a child with its `component`.
 */
// Named from pino's types, not as `pino.Logger`: the declaration file then imports no default
// export, so projects that use the SDK type-check without `esModuleInterop`.
export type Logger = PinoLogger;

export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof logLevels)[number];

export function createLogger(options: { service: string; level: LogLevel }): Logger {
  return pino({
    level: options.level,
    base: { service: options.service, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  });
}

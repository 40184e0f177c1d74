import pino from 'pino';

/**
 * Structured JSON logs on stdout (pino): one object per line, so `spool dev`, kubectl and any log
 * shipper read them alike. Every module logs through a child with its `component`.
 */
export type Logger = pino.Logger;

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

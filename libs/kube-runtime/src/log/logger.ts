import pino, { type Logger } from 'pino';

export type { Logger };

/** Field paths whose values never reach a log line (sandbox tokens, bearer tokens, secrets). */
export const REDACTED_PATHS = [
  'token',
  '*.token',
  '*.*.token',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'bearerToken',
  '*.bearerToken',
  'fleetToken',
  '*.fleetToken',
];

export interface LoggerOptions {
  name: string;
  level?: string;
  /** Write to this destination instead of stdout (tests capture log lines this way). */
  destination?: pino.DestinationStream;
}

/** The one logger factory: JSON lines, fields first then a fixed message, tokens redacted. */
export function createLogger(opts: LoggerOptions): Logger {
  const level = opts.level ?? process.env.LOG_LEVEL ?? 'info';
  const options: pino.LoggerOptions = {
    name: opts.name,
    level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    base: { component: opts.name },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

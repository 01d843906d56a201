import { Writable } from 'node:stream';
import { type Logger, createLogger } from '../log/logger';

/** A real pino logger whose JSON lines are kept for assertions. */
export function captureLog(name = 'test'): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { log: createLogger({ name, level: 'debug', destination }), lines };
}

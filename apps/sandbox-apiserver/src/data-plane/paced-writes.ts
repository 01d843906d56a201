import type { ServerResponse } from 'node:http';
import type { SandboxExecResult } from './exec-storage';

// Answers written at the pace the caller reads them, so a slow caller holds a slice of an answer
// in this process, never the whole of it encoded.

/** Waits until the response takes more data, or fails once the caller is gone. */
export function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (err?: Error): void => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      if (err === undefined) resolve();
      else reject(err);
    };
    const onDrain = (): void => done();
    const onClose = (): void => done(new Error('the caller hung up'));
    res.on('drain', onDrain);
    res.on('close', onClose);
  });
}

/** Characters of output encoded per write: megabytes of output are never encoded at once. */
const EXEC_ANSWER_SLICE_CHARS = 64 * 1024;

/** Writes s as the inside of a JSON string, a slice at a time, at the pace the caller reads. */
async function writeJsonStringBody(res: ServerResponse, s: string): Promise<void> {
  for (let i = 0; i < s.length;) {
    let end = Math.min(i + EXEC_ANSWER_SLICE_CHARS, s.length);
    // a slice never ends between the two halves of a surrogate pair
    const last = s.charCodeAt(end - 1);
    if (end < s.length && last >= 0xd800 && last <= 0xdbff) end--;
    if (!res.write(JSON.stringify(s.slice(i, end)).slice(1, -1))) await drained(res);
    i = end;
  }
}

/**
 * Writes a SandboxExecResult as JSON without encoding it whole: an output of megabytes (six
 * bytes per control byte once escaped) would otherwise be held again, encoded, for as long as a
 * slow caller takes to read it.
 */
export async function sendExecResult(res: ServerResponse, r: SandboxExecResult): Promise<void> {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  const head = JSON.stringify({ apiVersion: r.apiVersion, kind: r.kind, exitCode: r.exitCode });
  res.write(`${head.slice(0, -1)},"stdout":"`);
  await writeJsonStringBody(res, r.stdout);
  res.write('","stderr":"');
  await writeJsonStringBody(res, r.stderr);
  res.end('"}');
}

import type { ServerResponse } from 'node:http';
import { sendJson } from '@sandbox-scale/kube-runtime';

/** One body of a list response: the envelope, and the name of its array (`items`, or a Table's `rows`). */
export interface ListBody {
  readonly body: Record<string, unknown>;
  readonly key: string;
}

/**
 * Writes a list whose parts come one after another (`parts` yields each part's body, the same
 * envelope around the next elements of the array) as one JSON document, byte for byte what
 * JSON.stringify of the whole would give. A single part is sent as one buffer with its
 * Content-Length; more are streamed, each encoded and written as it comes, waiting for the
 * socket to drain between parts, so memory stays one part whatever the list's length, the
 * event loop serves other requests in between, and no string grows past V8's limit (a
 * million table rows are over 500 MB). The envelope of the first part is the one written.
 * Parts are pulled lazily: an error thrown by the first two is the caller's to answer with a
 * Status; a later one aborts the response (headers are out), which the client sees as a broken
 * transfer, never as a complete but wrong list.
 */
export async function writeList(res: ServerResponse, parts: Iterator<ListBody> | AsyncIterator<ListBody>): Promise<void> {
  const first = await parts.next();
  if (first.done) throw new Error('a list has at least one part');
  const second = await parts.next();
  if (second.done) {
    sendJson(res, 200, first.value.body);
    return;
  }
  res.writeHead(200, { 'Content-Type': 'application/json' });
  const { body, key } = first.value;
  const { [key]: _elements, ...envelope } = body;
  // the envelope with its array emptied and left open: `{...,"rows":[`
  const head = JSON.stringify({ ...envelope, [key]: [] });
  let written = false;
  const write = async (chunk: string): Promise<boolean> => {
    if (res.destroyed) return false;
    if (!res.write(chunk)) await drained(res);
    return !res.destroyed;
  };
  if (!(await write(head.slice(0, -2)))) return;
  try {
    for (let part: IteratorResult<ListBody> = first; !part.done; part = part === first ? second : await parts.next()) {
      const elements = part.value.body[part.value.key];
      if (!Array.isArray(elements) || elements.length === 0) continue;
      const text = JSON.stringify(elements);
      if (!(await write(`${written ? ',' : ''}${text.slice(1, -1)}`))) return;
      written = true;
    }
  } catch (err) {
    res.destroy(err instanceof Error ? err : new Error(String(err)));
    return;
  }
  res.end(']}');
}

/** Resolves once the socket takes more, or is gone. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

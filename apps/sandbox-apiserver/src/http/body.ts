import type { IncomingMessage } from 'node:http';
import { BadRequestError, StatusError } from '@sandbox-scale/scale-core';
import { parse as parseYaml } from 'yaml';

const MAX_BODY_BYTES = 3 * 1024 * 1024;

/** Reads and decodes a JSON (or YAML) request body; an empty body is `undefined`. */
export async function readBody(req: IncomingMessage): Promise<unknown> {
  const type = (req.headers['content-type'] ?? 'application/json').split(';')[0]?.trim().toLowerCase() ?? '';
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > MAX_BODY_BYTES) throw new StatusError('BadRequest', `request body larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(buf);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return undefined;
  if (type === 'application/json' || type === '') {
    try {
      return JSON.parse(text) as unknown;
    } catch (err) {
      throw new BadRequestError(`invalid JSON body: ${(err as Error).message}`, { cause: err });
    }
  }
  if (type === 'application/yaml') {
    try {
      return parseYaml(text) as unknown;
    } catch (err) {
      throw new BadRequestError(`invalid YAML body: ${(err as Error).message}`, { cause: err });
    }
  }
  throw new StatusError('UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml`);
}

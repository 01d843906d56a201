import type { IncomingMessage } from 'node:http';
import { readBounded } from '@sandbox-scale/kube-runtime';
import { BadRequestError, StatusError } from '@sandbox-scale/scale-core';
import { parse as parseYaml } from 'yaml';

const MAX_BODY_BYTES = 3 * 1024 * 1024;

/** Reads and decodes a JSON (or YAML) request body; an empty body is `undefined`. */
export async function readBody(req: IncomingMessage): Promise<unknown> {
  const type = (req.headers['content-type'] ?? 'application/json').split(';')[0]?.trim().toLowerCase() ?? '';
  const body = await readBounded(req, MAX_BODY_BYTES);
  if (body === undefined) throw new StatusError('BadRequest', `request body larger than ${MAX_BODY_BYTES} bytes`);
  const text = body.toString('utf8');
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

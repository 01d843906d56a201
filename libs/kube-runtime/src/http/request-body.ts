import type { IncomingMessage } from 'node:http';
import { assertNoPrototypeKeys, BadRequestError, isJsonSyntaxError, parseUntrustedJson, StatusError } from '@sandbox-scale/scale-core';
import { parse as parseYaml } from 'yaml';
import { readBounded } from './guarded-server';

export interface RequestBodyOptions {
  /** The largest body read; a larger one is a 400 (and is drained, see readBounded). */
  readonly maxBytes: number;
  /** Also accept `application/yaml`, as kube-apiserver does. */
  readonly yaml?: boolean;
  /** An empty body is `undefined` (options bodies); otherwise it is a 400. */
  readonly optional?: boolean;
}

/**
 * The one reader of JSON request bodies (and YAML where allowed): the media type is checked
 * first (415 for any other), then at most `maxBytes` are read and decoded. Every failure is a
 * Kubernetes Status error, so a handler's usual error path answers it. A key that names a
 * prototype (`__proto__`, `constructor`, `prototype`) anywhere in the body is a 422 naming it.
 */
export async function readRequestBody(req: IncomingMessage, opts: RequestBodyOptions): Promise<unknown> {
  const type = (req.headers['content-type'] ?? 'application/json').split(';')[0]?.trim().toLowerCase() ?? '';
  const yaml = opts.yaml === true && type === 'application/yaml';
  if (!yaml && type !== 'application/json' && type !== '') {
    const accepted = opts.yaml === true ? 'application/json, application/yaml' : 'application/json';
    throw new StatusError(
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: ${accepted}`,
    );
  }
  const body = await readBounded(req, opts.maxBytes);
  if (body === undefined) throw new BadRequestError(`request body larger than ${opts.maxBytes} bytes`);
  const text = body.toString('utf8');
  if (text.trim() === '') {
    if (opts.optional === true) return undefined;
    throw new BadRequestError('the request body is empty');
  }
  if (!yaml) {
    try {
      return parseUntrustedJson(text);
    } catch (err) {
      if (isJsonSyntaxError(err)) throw new BadRequestError(`invalid JSON body: ${err.message}`, { cause: err });
      throw err;
    }
  }
  let value: unknown;
  try {
    value = parseYaml(text) as unknown;
  } catch (err) {
    throw new BadRequestError(`invalid YAML body: ${(err as Error).message}`, { cause: err });
  }
  assertNoPrototypeKeys(value, undefined, text);
  return value;
}

import type { IncomingMessage } from 'node:http';
import { readRequestBody, type RequestBodyOptions } from '@sandbox-scale/kube-runtime';

/** As kube-apiserver reads them: JSON or YAML, up to 3 MiB; an empty body (an options body left out) is `undefined`. */
const API_BODY: RequestBodyOptions = { maxBytes: 3 * 1024 * 1024, yaml: true, optional: true };

/** Reads and decodes a request body; a bad one is a Status error (400 or 415). */
export function readBody(req: IncomingMessage): Promise<unknown> {
  return readRequestBody(req, API_BODY);
}

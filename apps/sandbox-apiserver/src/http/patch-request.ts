import type { IncomingMessage } from 'node:http';
import { readBounded } from '@sandbox-scale/kube-runtime';
import { BadRequestError, isJsonSyntaxError, parseUntrustedJson, StatusError } from '@sandbox-scale/scale-core';
import { PATCH_TYPES, type PatchType } from '../storage/patch-sandbox';

const MAX_PATCH_BYTES = 1024 * 1024;

/** The patch type from Content-Type: 415 for apply (saying what to use instead) and any other type. */
export function patchTypeOf(contentType: string | undefined): PatchType {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === PATCH_TYPES.merge || type === PATCH_TYPES.json || type === PATCH_TYPES.strategic) return type;
  if (type === 'application/apply-patch+yaml')
    throw new StatusError(
      'UnsupportedMediaType',
      'server-side apply is not supported on sandboxes: use a merge patch (kubectl patch --type=merge) or a JSON patch on metadata.labels and metadata.annotations',
    );
  throw new StatusError(
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${Object.values(PATCH_TYPES).join(', ')}`,
  );
}

/** The patch document of a PATCH request; undefined when the body is empty; a prototype key anywhere in it is a 422. */
export async function readPatch(req: IncomingMessage): Promise<unknown> {
  const body = await readBounded(req, MAX_PATCH_BYTES);
  if (body === undefined) throw new StatusError('BadRequest', `request body larger than ${MAX_PATCH_BYTES} bytes`);
  const text = body.toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return parseUntrustedJson(text, 'the patch');
  } catch (err) {
    if (isJsonSyntaxError(err)) throw new BadRequestError(`invalid JSON patch body: ${err.message}`, { cause: err });
    throw err;
  }
}

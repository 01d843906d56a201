import type { IncomingMessage } from 'node:http';
import { readBounded } from '@sandbox-scale/kube-runtime';
import { BadRequestError, findPrototypeKey, isJsonSyntaxError, parseUntrustedJson, StatusError } from '@sandbox-scale/scale-core';
import { parse as parseYaml } from 'yaml';
import { APPLY_PATCH_TYPE, PATCH_TYPES, type RequestPatchType } from '../storage/patch-sandbox';

const MAX_PATCH_BYTES = 1024 * 1024;

/** The patch type from Content-Type; any other type is a 415 listing the ones accepted. */
export function patchTypeOf(contentType: string | undefined): RequestPatchType {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === PATCH_TYPES.merge || type === PATCH_TYPES.json || type === PATCH_TYPES.strategic || type === APPLY_PATCH_TYPE) return type;
  throw new StatusError(
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${[...Object.values(PATCH_TYPES), APPLY_PATCH_TYPE].join(', ')}`,
  );
}

const MAX_MANAGER_BYTES = 128;

/**
 * The field manager of a write, as kube-apiserver picks it: the fieldManager parameter, else
 * the client's user agent up to its first `/` (kubectl's own commands always name theirs).
 * An apply must name it; one that is too long or not printable is a 400.
 */
export function fieldManagerOf(params: URLSearchParams, userAgent: string | undefined, apply: boolean): string {
  const given = params.get('fieldManager');
  if (given === null || given === '') {
    if (apply) throw new BadRequestError('PATCH requests with the apply content type (server-side apply) require fieldManager');
    return (userAgent ?? '').split('/')[0]?.slice(0, MAX_MANAGER_BYTES) ?? '';
  }
  if (Buffer.byteLength(given) > MAX_MANAGER_BYTES)
    throw new BadRequestError(`fieldManager: Too long: may not be more than ${MAX_MANAGER_BYTES} bytes`);
  if (!/^[\x21-\x7e][\x20-\x7e]*$/.test(given)) throw new BadRequestError('fieldManager: Invalid value: must be printable ASCII');
  return given;
}

/** `force` of a server-side apply; kube-apiserver refuses it on any other patch. */
export function forceOf(params: URLSearchParams, apply: boolean): boolean {
  const v = params.get('force');
  if (v === null) return false;
  if (v !== 'true' && v !== 'false') throw new BadRequestError(`force: Invalid value: ${JSON.stringify(v)}: must be true or false`);
  if (!apply && v === 'true') throw new BadRequestError('force: Forbidden: may not be specified for non-apply patch');
  return v === 'true';
}

/**
 * The patch document of a PATCH request; undefined when the body is empty; a prototype key
 * anywhere in it is a 422. An apply configuration is YAML (JSON being YAML too).
 */
export async function readPatch(req: IncomingMessage, type: RequestPatchType = PATCH_TYPES.merge): Promise<unknown> {
  const body = await readBounded(req, MAX_PATCH_BYTES);
  if (body === undefined) throw new StatusError('BadRequest', `request body larger than ${MAX_PATCH_BYTES} bytes`);
  const text = body.toString('utf8');
  if (text.trim() === '') return undefined;
  if (type === APPLY_PATCH_TYPE && !text.trimStart().startsWith('{')) return parseApplyYaml(text);
  try {
    return parseUntrustedJson(text, 'the patch');
  } catch (err) {
    if (isJsonSyntaxError(err)) throw new BadRequestError(`invalid JSON patch body: ${err.message}`, { cause: err });
    throw err;
  }
}

/** A YAML apply configuration: one document, no aliases, and no key that names a prototype. */
function parseApplyYaml(text: string): unknown {
  let doc: unknown;
  try {
    // maxAliasCount 0: an alias could expand a small body into a huge object
    doc = parseYaml(text, { maxAliasCount: 0, uniqueKeys: true, merge: false });
  } catch (err) {
    throw new BadRequestError(`invalid YAML apply configuration: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const key = findPrototypeKey(doc);
  if (key !== undefined)
    throw new StatusError('Invalid', `the apply configuration holds the key ${key}: it names an object's prototype`, {
      causes: [{ reason: 'FieldValueForbidden', field: key, message: "it is not allowed as a key: it names an object's prototype" }],
    });
  return doc;
}

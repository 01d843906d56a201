import { isPrototypeKeyError, parseUntrustedJson } from '@sandbox-scale/scale-core';
import type { z } from 'zod';
import { MalformedReplyError, NodeAtCapacityError, SandboxdHttpError } from './errors';
import { ErrorBodySchema, RedirectReplySchema } from './replies';
import type { RawReply } from './transport';
import { resolveNodeAddr } from './addresses';

/** Parses a reply body as JSON (an empty body is `{}`), then validates it with the schema. */
export function decodeJson<S extends z.ZodType>(op: string, reply: RawReply, schema: S): z.output<S> {
  return validate(op, reply.statusCode, parseJson(op, reply), schema);
}

export function validate<S extends z.ZodType>(op: string, statusCode: number, value: unknown, schema: S): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new MalformedReplyError({ operation: op, statusCode, detail, cause: parsed.error });
  }
  return parsed.data;
}

export function parseJson(op: string, reply: RawReply): unknown {
  const text = reply.body?.toString('utf8') ?? '';
  if (text.trim() === '') return {};
  try {
    // a node's reply is untrusted too: a key naming a prototype makes it malformed
    return parseUntrustedJson(text, 'the reply');
  } catch (err) {
    const detail = isPrototypeKeyError(err) ? `a key names a prototype (${err.field})` : 'invalid JSON';
    throw new MalformedReplyError({ operation: op, statusCode: reply.statusCode, detail, cause: err });
  }
}

/** The `error` field of an error body, or empty when there is none (or it was too large). */
export function errorMessage(reply: RawReply): string {
  const text = reply.body?.toString('utf8') ?? '';
  try {
    const parsed = ErrorBodySchema.safeParse(parseUntrustedJson(text));
    return parsed.success ? parsed.data.error : '';
  } catch {
    return '';
  }
}

export function httpError(op: string, reply: RawReply): SandboxdHttpError {
  return new SandboxdHttpError({
    operation: op,
    statusCode: reply.statusCode,
    message: errorMessage(reply),
    ...(reply.retryAfterSeconds !== undefined ? { retryAfterSeconds: reply.retryAfterSeconds } : {}),
  });
}

export function capacityFrom429(reply: RawReply): NodeAtCapacityError {
  return new NodeAtCapacityError({ statusCode: 429, message: errorMessage(reply) });
}

/** A 200 without an `id`: redirect candidates (possibly none), resolved against the dialed node. */
export function capacityFromRedirect(op: string, statusCode: number, body: unknown, dialedUrl: string): NodeAtCapacityError {
  const r = validate(op, statusCode, body, RedirectReplySchema);
  return new NodeAtCapacityError({
    statusCode,
    message: r.redirect.length > 0 ? 'node redirected the claim to peers' : 'node answered without a sandbox',
    redirect: r.redirect,
    candidates: r.redirect.map((a) => resolveNodeAddr(a, dialedUrl)),
    requirePromoted: r.requirePromoted,
  });
}

/**
 * True when the body has an `id` field with some value, valid or not. A reply that names an id
 * of the wrong type is a broken claim reply, not a redirect: reading it as "node at capacity"
 * would send the claim to a peer while this node may already have handed the VM over.
 */
export function carriesId(body: unknown): boolean {
  return typeof body === 'object' && body !== null && 'id' in body && body.id !== undefined && body.id !== null && body.id !== '';
}

/** True when the decoded body carries a non-empty `id` (a claim rather than a redirect). */
export function hasId(body: unknown): boolean {
  return typeof body === 'object' && body !== null && 'id' in body && typeof body.id === 'string' && body.id !== '';
}

import type { ServerResponse } from 'node:http';
import type { z } from 'zod';
import { badBody, parseBodyJson } from './api-error';

/** Request bodies are capped at 1 MiB, as the daemon's. */
export const BODY_LIMIT_BYTES = 1 << 20;

export interface Reply {
  status: number;
  /** JSON body; absent = no body (204) unless `text` is set. */
  json?: unknown;
  text?: string;
  contentType?: string;
  headers?: Readonly<Record<string, string>>;
}

export const jsonReply = (json: unknown, status = 200): Reply => ({ status, json });
export const noContent = (): Reply => ({ status: 204 });
export const errorReply = (status: number, message: string, headers?: Readonly<Record<string, string>>): Reply => ({
  status,
  json: { error: message },
  ...(headers ? { headers } : {}),
});

/**
 * Decodes a JSON body leniently, as the daemon does: unknown fields ignored, `null` is the
 * zero value. Empty (unless allowed), malformed or mistyped bodies are `400 invalid request body`.
 */
export function decodeBody<S extends z.ZodType>(raw: Buffer, schema: S, allowEmpty = false): z.output<S> {
  const text = raw.toString('utf8');
  if (text.trim() === '') {
    if (!allowEmpty) throw badBody();
    return schema.parse({});
  }
  const value = parseBodyJson(text);
  const parsed = schema.safeParse(value ?? {});
  if (!parsed.success) throw badBody();
  return parsed.data;
}

export function writeReply(res: ServerResponse, reply: Reply): void {
  const headers: Record<string, string | number> = { ...reply.headers };
  let payload: string | undefined;
  if (reply.json !== undefined) {
    payload = JSON.stringify(reply.json);
    headers['content-type'] = 'application/json';
  } else if (reply.text !== undefined) {
    payload = reply.text;
    headers['content-type'] = reply.contentType ?? 'text/plain; charset=utf-8';
  }
  if (payload !== undefined) headers['content-length'] = Buffer.byteLength(payload);
  res.writeHead(reply.status, headers);
  res.end(payload);
}

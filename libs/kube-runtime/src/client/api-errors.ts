import { ApiException } from '@kubernetes/client-node';
import { z } from 'zod';

/**
 * Predicates over errors from the API server. client-node's ApiException carries the HTTP
 * status in `.code` and the raw response text in `.body`; the Status `reason` inside is what
 * tells a 409 AlreadyExists from a 409 Conflict, so it is parsed rather than guessed.
 */
const StatusSchema = z.object({
  kind: z.literal('Status').optional(),
  status: z.string().optional(),
  message: z.string().optional(),
  reason: z.string().optional(),
  code: z.number().optional(),
});

export interface ApiStatus {
  code: number;
  reason?: string;
  message?: string;
}

function parseBody(body: unknown): z.infer<typeof StatusSchema> | undefined {
  let value = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body) as unknown;
    } catch {
      return undefined;
    }
  }
  const parsed = StatusSchema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

function codeOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { code, statusCode } = err as { code?: unknown; statusCode?: unknown };
  if (typeof code === 'number') return code;
  if (typeof statusCode === 'number') return statusCode;
  return undefined;
}

/** The HTTP status and Status reason of an API error, or undefined for anything else. */
export function apiStatusOf(err: unknown): ApiStatus | undefined {
  const code = codeOf(err);
  if (code === undefined) return undefined;
  const status = parseBody((err as { body?: unknown }).body);
  return { code, reason: status?.reason, message: status?.message };
}

function hasStatus(err: unknown, code: number, reason?: string): boolean {
  const s = apiStatusOf(err);
  if (!s || s.code !== code) return false;
  return reason === undefined || s.reason === undefined || s.reason === reason;
}

export function isNotFound(err: unknown): boolean {
  return hasStatus(err, 404);
}

/** A write lost an optimistic-concurrency race (stale resourceVersion) or an SSA field conflict. */
export function isConflict(err: unknown): boolean {
  const s = apiStatusOf(err);
  return s?.code === 409 && s.reason !== 'AlreadyExists';
}

export function isAlreadyExists(err: unknown): boolean {
  const s = apiStatusOf(err);
  return s?.code === 409 && s.reason === 'AlreadyExists';
}

/** 410 Gone: the resourceVersion asked for has been compacted away; the caller must relist. */
export function isGone(err: unknown): boolean {
  return hasStatus(err, 410);
}

export function isForbidden(err: unknown): boolean {
  return hasStatus(err, 403);
}

/** Returns undefined for a NotFound error and rethrows anything else, as controller-runtime's IgnoreNotFound. */
export async function ignoreNotFound<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export function apiException(code: number, body: string, headers: Record<string, string>): ApiException<string> {
  const reason = parseBody(body)?.message ?? body.slice(0, 200);
  return new ApiException(code, `HTTP ${code}: ${reason}`, body, headers);
}

import { z } from 'zod';

/**
 * e2b's control-plane REST API as e2b's SDKs call it (JS 2.51, Python 2.63, and the v1 create
 * and connect of earlier releases): the request bodies the server accepts and the shapes it
 * answers with. Python's generated models raise on any missing required key, so every answer
 * carries the full required set, the deprecated `clientID` included.
 */

const stringMap = z.record(z.string(), z.string());
const seconds = z
  .number()
  .int()
  .min(0)
  .max(365 * 24 * 3600);

/** `POST /v2/sandboxes` (and v1 `POST /sandboxes`, which adds `secure`). */
export const NewSandboxSchema = z.object({
  templateID: z.string().min(1).max(253),
  timeout: seconds.optional(),
  metadata: stringMap.optional(),
  envVars: stringMap.optional(),
  allow_internet_access: z.boolean().optional(),
  secure: z.boolean().optional(),
  autoPause: z.boolean().optional(),
  autoPauseMemory: z.boolean().optional(),
  autoResume: z.object({ enabled: z.boolean() }).optional(),
  network: z.record(z.string(), z.unknown()).optional(),
  iam: z.unknown().optional(),
  mcp: z.unknown().optional(),
  volumeMounts: z.array(z.object({ name: z.string(), path: z.string() })).optional(),
});
export type NewSandbox = z.infer<typeof NewSandboxSchema>;

/** `POST /v2/sandboxes/{id}/connect`: `memory:false` asks for a reboot instead of a resume. */
export const ConnectBodySchema = z.object({ timeout: seconds.optional(), memory: z.boolean().optional() });
export const TimeoutBodySchema = z.object({ timeout: seconds });
export const PauseBodySchema = z.object({ memory: z.boolean().optional(), requireHealthyGuest: z.boolean().optional() });
export const ForkBodySchema = z.object({ timeout: seconds.optional(), count: z.number().int().min(1).max(64).optional() });
export const SnapshotBodySchema = z.object({ name: z.string().max(253).optional() });

/** The answer of create, connect and fork. */
export interface SandboxReply {
  sandboxID: string;
  templateID: string;
  clientID: string;
  envdVersion: string;
  envdAccessToken?: string;
  trafficAccessToken?: string | null;
  domain?: string | null;
  alias?: string;
}

export type SandboxState = 'running' | 'paused';

/** `GET /sandboxes/{id}` and each item of `GET /v2/sandboxes`. */
export interface SandboxDetail {
  templateID: string;
  sandboxID: string;
  clientID: string;
  startedAt: string;
  endAt: string;
  envdVersion: string;
  cpuCount: number;
  memoryMB: number;
  diskSizeMB: number;
  state: SandboxState;
  alias?: string;
  metadata?: Record<string, string>;
  domain?: string | null;
}

export interface SandboxMetric {
  timestamp: string;
  timestampUnix: number;
  cpuCount: number;
  cpuUsedPct: number;
  memUsed: number;
  memTotal: number;
  memCache: number;
  diskUsed: number;
  diskTotal: number;
}

export interface SnapshotInfo {
  snapshotID: string;
  names: string[];
}

/** Every non-2xx answer: the JS SDK decides kill→false and pause→false from `code`, not the status. */
export interface ErrorBody {
  code: number;
  message: string;
  error_code?: string;
}

export function errorBody(code: number, message: string, errorCode?: string): ErrorBody {
  return { code, message, ...(errorCode ? { error_code: errorCode } : {}) };
}

/** The v2 list's filters, parsed from its query. */
export interface ListFilter {
  states: SandboxState[];
  metadata: Record<string, string>;
  template: string | undefined;
  startedAfter: Date | undefined;
  order: 'asc' | 'desc';
  limit: number | undefined;
  nextToken: string | undefined;
}

export class QueryError extends Error {
  override readonly name = 'QueryError';
}

export function isQueryError(err: unknown): err is QueryError {
  return err instanceof QueryError;
}

/** Most sandboxes one page holds; the SDKs send no limit unless the caller sets one. */
export const MAX_LIST_LIMIT = 1000;

/**
 * `GET /v2/sandboxes?state=running,paused&metadata=…&limit=&nextToken=`. `metadata` is one
 * parameter holding `k=v&k2=v2` whose keys and values were percent-encoded before the whole was
 * encoded as a query (and that again as the parameter's value): `{app:"x y"}` arrives as
 * `metadata=app%3Dx%252520y`. No state means both.
 */
export function parseListQuery(q: URLSearchParams): ListFilter {
  const states = (q.get('state') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const s of states) if (s !== 'running' && s !== 'paused') throw new QueryError(`state "${s}" is not running or paused`);
  const metadata = Object.create(null) as Record<string, string>;
  const raw = q.get('metadata');
  if (raw) {
    // once more as a query (URLSearchParams undoes the second encoding), then each part once more
    for (const [k, v] of new URLSearchParams(raw)) {
      try {
        metadata[decodeURIComponent(k)] = decodeURIComponent(v);
      } catch {
        throw new QueryError(`metadata "${k}=${v}" is not percent-encoded text`);
      }
    }
  }
  const limitText = q.get('limit');
  let limit: number | undefined;
  if (limitText !== null) {
    if (!/^\d+$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > MAX_LIST_LIMIT)
      throw new QueryError(`limit must be a whole number in 1-${MAX_LIST_LIMIT}, got "${limitText}"`);
    limit = Number(limitText);
  }
  const after = q.get('startedAfter');
  const startedAfter = after ? new Date(after) : undefined;
  if (startedAfter && Number.isNaN(startedAfter.getTime())) throw new QueryError(`startedAfter "${after}" is not an ISO-8601 time`);
  const order = q.get('order') ?? 'asc';
  if (order !== 'asc' && order !== 'desc') throw new QueryError(`order must be asc or desc, got "${order}"`);
  return {
    states: states.length === 0 ? ['running', 'paused'] : (states as SandboxState[]),
    metadata,
    template: q.get('template') ?? undefined,
    startedAfter,
    order,
    limit,
    nextToken: q.get('nextToken') ?? undefined,
  };
}

import type { z } from 'zod';
import {
  ConnectBodySchema,
  errorBody,
  ForkBodySchema,
  isQueryError,
  NewSandboxSchema,
  parseListQuery,
  PauseBodySchema,
  SnapshotBodySchema,
  TimeoutBodySchema,
  type ListFilter,
  type SandboxDetail,
  type SandboxMetric,
  type SandboxReply,
  type SandboxState,
  type SnapshotInfo,
} from './control-plane';

/**
 * The control plane's routes, translated: a request's method, path, query and parsed body in, a
 * status and JSON body out, every verb handed to a backend that does it (sandbox-apiserver,
 * as the caller, through its own storage). What the routes answer is what e2b's SDKs require:
 * 201 on create (Python fails on 200), `{code,message}` on every error (the JS SDK reads 404 and
 * 409 from `code`), and `Should-Retry: false` on a create that failed after it may have acted
 * (Python retries 5xx creates otherwise).
 */

/** A sandbox as the backend reports it. */
export interface E2bSandbox {
  sandboxID: string;
  templateID: string;
  state: SandboxState;
  startedAt: Date;
  endAt: Date;
  metadata: Record<string, string>;
  cpuCount: number;
  memoryMB: number;
  diskSizeMB: number;
}

export interface CreateRequest {
  templateID: string;
  /** The caller's Idempotency-Key: a create sent again with the same key answers the sandbox the first made. */
  idempotencyKey: string | undefined;
  timeoutSeconds: number;
  metadata: Record<string, string>;
  envVars: Record<string, string>;
}

export interface E2bBackend {
  create(r: CreateRequest): Promise<E2bSandbox>;
  get(id: string): Promise<E2bSandbox | undefined>;
  list(f: ListFilter): Promise<{ items: E2bSandbox[]; nextToken?: string }>;
  /** false: there was no such sandbox. */
  kill(id: string): Promise<boolean>;
  /** Moves the sandbox's end to now + seconds. */
  setTimeout(id: string, seconds: number): Promise<void>;
  /** false: it was paused already. */
  pause(id: string): Promise<boolean>;
  /** Resumes a paused sandbox (`resumed`), and never shortens its end. */
  connect(id: string, timeoutSeconds: number): Promise<{ sandbox: E2bSandbox; resumed: boolean }>;
  snapshot(id: string, name: string | undefined): Promise<SnapshotInfo>;
  /** The checkpoints of one sandbox, or of every sandbox of the caller's. */
  listSnapshots(sandboxID: string | undefined): Promise<SnapshotInfo[]>;
  /** false: there was no such checkpoint. */
  deleteSnapshot(snapshotID: string): Promise<boolean>;
  /** One sample of what the sandbox's node measures now. */
  metrics(id: string): Promise<SandboxMetric[]>;
  /** `count` clones of a running sandbox, each living `timeoutSeconds`. */
  fork(id: string, count: number, timeoutSeconds: number): Promise<E2bSandbox[]>;
}

/** An answer the backend chose: a status and words for the caller. */
export class E2bApiError extends Error {
  override readonly name = 'E2bApiError';
  constructor(
    readonly status: number,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export function isE2bApiError(err: unknown): err is E2bApiError {
  return err instanceof E2bApiError;
}

export interface ControlPlaneRequest {
  method: string;
  /** The path without the query. */
  path: string;
  query: URLSearchParams;
  /** The parsed JSON body; undefined when there was none. */
  body: unknown;
  /** The Idempotency-Key header, when sent once. */
  idempotencyKey?: string;
}

export interface ControlPlaneReply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** An error the backend did not choose to answer with: the server logs it; the caller sees 500. */
  unexpected?: unknown;
}

/** What the server says it runs as envd: the gates the SDKs read from it (§ version gates). */
export interface ServedIdentity {
  envdVersion: string;
  /** The sandbox's envd access token: envd's calls carry it back as X-Access-Token. */
  envdAccessToken: (sandboxID: string) => string;
  /** An e2b client id; Python requires the field. */
  clientID: string;
}

/** A create with no timeout runs 300 s, as e2b's own default. */
export const DEFAULT_TIMEOUT_SECONDS = 300;

const notFound = (id: string): E2bApiError => new E2bApiError(404, `sandbox "${id}" not found`);

function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  const r = schema.safeParse(body ?? {});
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new E2bApiError(400, `invalid request body: ${issue ? `${issue.path.join('.') || 'body'}: ${issue.message}` : 'malformed'}`);
  }
  return r.data;
}

export function sandboxReply(s: E2bSandbox, id: ServedIdentity): SandboxReply {
  return {
    sandboxID: s.sandboxID,
    templateID: s.templateID,
    clientID: id.clientID,
    envdVersion: id.envdVersion,
    envdAccessToken: id.envdAccessToken(s.sandboxID),
    trafficAccessToken: null,
    domain: null,
  };
}

export function sandboxDetail(s: E2bSandbox, id: Omit<ServedIdentity, 'envdAccessToken'>): SandboxDetail {
  return {
    templateID: s.templateID,
    sandboxID: s.sandboxID,
    clientID: id.clientID,
    startedAt: s.startedAt.toISOString(),
    endAt: s.endAt.toISOString(),
    envdVersion: id.envdVersion,
    cpuCount: s.cpuCount,
    memoryMB: s.memoryMB,
    diskSizeMB: s.diskSizeMB,
    state: s.state,
    metadata: s.metadata,
  };
}

/** What the server refuses rather than ignores: settings it cannot honour. */
function refuseUnsupported(b: z.infer<typeof NewSandboxSchema>): void {
  const refused: [boolean, string][] = [
    [b.secure === false, 'secure:false (every sandbox needs its access token)'],
    [b.autoPause === true, 'autoPause (a sandbox past its timeout is released, not paused)'],
    [b.autoPauseMemory !== undefined, 'autoPauseMemory'],
    [b.allow_internet_access === false, 'allow_internet_access:false (no egress rules are enforced here)'],
    [b.network !== undefined, 'network rules'],
    [b.volumeMounts !== undefined && b.volumeMounts.length > 0, 'volumeMounts'],
    [b.autoResume?.enabled === true, 'autoResume'],
    [b.mcp !== undefined, 'mcp'],
    [b.iam !== undefined, 'iam'],
  ];
  const said = refused.filter(([on]) => on).map(([, what]) => what);
  if (said.length > 0) throw new E2bApiError(400, `not supported here: ${said.join(', ')}`);
}

type Route = { kind: string; id?: string };

function routeOf(method: string, path: string): Route | undefined {
  if (path === '/snapshots') return method === 'GET' ? { kind: 'listSnapshots' } : undefined;
  const template = /^\/templates\/([^/]+)$/.exec(path);
  if (template?.[1] !== undefined) {
    if (method !== 'DELETE') return undefined;
    try {
      return { kind: 'deleteSnapshot', id: decodeURIComponent(template[1]) };
    } catch {
      return undefined;
    }
  }
  const m = /^\/(v2\/)?sandboxes(?:\/([^/]+)(?:\/([a-z]+))?)?$/.exec(path);
  if (!m) return undefined;
  const [, v2, rawId, action] = m;
  let id: string | undefined;
  try {
    id = rawId === undefined ? undefined : decodeURIComponent(rawId);
  } catch {
    return undefined;
  }
  if (id === undefined) {
    if (method === 'POST') return { kind: 'create' };
    if (method === 'GET') return { kind: 'list' };
    return undefined;
  }
  if (action === undefined) {
    if (v2) return undefined;
    if (method === 'GET') return { kind: 'get', id };
    if (method === 'DELETE') return { kind: 'kill', id };
    return undefined;
  }
  if (action === 'metrics' && !v2) return method === 'GET' ? { kind: 'metrics', id } : undefined;
  if (method !== 'POST') return undefined;
  if (action === 'connect') return { kind: 'connect', id };
  if (v2) return undefined;
  if (['timeout', 'pause', 'resume', 'fork', 'snapshots', 'refreshes'].includes(action)) return { kind: action, id };
  return undefined;
}

async function route(b: E2bBackend, identity: ServedIdentity, r: ControlPlaneRequest, rt: Route): Promise<ControlPlaneReply> {
  const id = rt.id ?? '';
  switch (rt.kind) {
    case 'create': {
      const body = parseBody(NewSandboxSchema, r.body);
      refuseUnsupported(body);
      const s = await b.create({
        templateID: body.templateID,
        idempotencyKey: r.idempotencyKey,
        timeoutSeconds: body.timeout ?? DEFAULT_TIMEOUT_SECONDS,
        metadata: body.metadata ?? {},
        envVars: body.envVars ?? {},
      });
      return { status: 201, body: sandboxReply(s, identity) };
    }
    case 'list': {
      let filter: ListFilter;
      try {
        filter = parseListQuery(r.query);
      } catch (err) {
        if (isQueryError(err)) throw new E2bApiError(400, err.message);
        throw err;
      }
      const page = await b.list(filter);
      return {
        status: 200,
        body: page.items.map((s) => sandboxDetail(s, identity)),
        ...(page.nextToken ? { headers: { 'x-next-token': page.nextToken } } : {}),
      };
    }
    case 'get': {
      const s = await b.get(id);
      if (s === undefined) throw notFound(id);
      return { status: 200, body: sandboxDetail(s, identity) };
    }
    case 'kill':
      if (!(await b.kill(id))) throw notFound(id);
      return { status: 204 };
    case 'timeout':
    case 'refreshes': {
      const seconds = rt.kind === 'timeout' ? parseBody(TimeoutBodySchema, r.body).timeout : DEFAULT_TIMEOUT_SECONDS;
      await b.setTimeout(id, seconds);
      return { status: 204 };
    }
    case 'pause': {
      const body = parseBody(PauseBodySchema, r.body);
      if (body.memory === false) throw new E2bApiError(400, 'not supported here: a pause that keeps only the filesystem (memory:false)');
      if (!(await b.pause(id))) throw new E2bApiError(409, `sandbox "${id}" is already paused`);
      return { status: 204 };
    }
    case 'connect':
    case 'resume': {
      const body = parseBody(ConnectBodySchema, r.body);
      if (body.memory === false) throw new E2bApiError(400, 'not supported here: a reboot on resume (memory:false)');
      const { sandbox, resumed } = await b.connect(id, body.timeout ?? DEFAULT_TIMEOUT_SECONDS);
      return { status: resumed ? 201 : 200, body: sandboxReply(sandbox, identity) };
    }
    case 'snapshots': {
      const body = parseBody(SnapshotBodySchema, r.body);
      return { status: 201, body: await b.snapshot(id, body.name) };
    }
    case 'fork': {
      const body = parseBody(ForkBodySchema, r.body);
      const children = await b.fork(id, body.count ?? 1, body.timeout ?? DEFAULT_TIMEOUT_SECONDS);
      return { status: 201, body: children.map((c) => ({ sandbox: sandboxReply(c, identity) })) };
    }
    case 'metrics':
      return { status: 200, body: await b.metrics(id) };
    case 'listSnapshots': {
      const all = await b.listSnapshots(r.query.get('sandboxID') ?? undefined);
      const name = r.query.get('name');
      return { status: 200, body: name === null ? all : all.filter((s) => s.names.includes(name)) };
    }
    case 'deleteSnapshot':
      if (!(await b.deleteSnapshot(id))) throw new E2bApiError(404, `snapshot "${id}" not found`);
      return { status: 204 };
  }
  throw new E2bApiError(404, `no route for ${r.method} ${r.path}`);
}

/**
 * Answers one control-plane request through the backend. Any error becomes `{code,message}`;
 * a create that failed with a 5xx may have made a sandbox, so it says not to retry.
 */
export async function serveControlPlane(b: E2bBackend, identity: ServedIdentity, r: ControlPlaneRequest): Promise<ControlPlaneReply> {
  const rt = routeOf(r.method, r.path);
  if (rt === undefined) return { status: 404, body: errorBody(404, `no route for ${r.method} ${r.path}`) };
  try {
    return await route(b, identity, r, rt);
  } catch (err) {
    const status = isE2bApiError(err) ? err.status : 500;
    const message = isE2bApiError(err) ? err.message : 'internal error';
    const headers: Record<string, string> = {};
    if (isE2bApiError(err) && err.retryAfterSeconds !== undefined) headers['retry-after'] = String(err.retryAfterSeconds);
    if (rt.kind === 'create' && status >= 500) headers['should-retry'] = 'false';
    return {
      status,
      body: errorBody(status, message),
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      ...(isE2bApiError(err) ? {} : { unexpected: err }),
    };
  }
}

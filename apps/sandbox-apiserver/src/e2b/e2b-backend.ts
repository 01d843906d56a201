import {
  E2bApiError,
  MAX_LIST_LIMIT,
  type E2bBackend,
  type E2bSandbox,
  type SandboxMetric,
  type SnapshotInfo,
  type ListFilter,
} from '@sandbox-scale/e2b-protocol';
import {
  ApiError,
  isAlreadyExists,
  isBadRequest,
  isClaimFailed,
  isClaimTimeout,
  isDeadlineExceeded,
  isForbidden,
  isNotFound,
  isSdkError,
  isTooLarge,
  isUnauthorized,
  isUnavailable,
  isWrongFileKind,
  type ClaimObject,
  type SandboxClient,
  type SandboxObject,
  type Sandbox,
  type SandboxStats,
} from '@sandbox-scale/sdk';
import { createHash } from 'node:crypto';
import { SANDBOX_LABELS } from '@sandbox-scale/scale-core';
import { z } from 'zod';

/**
 * e2b's verbs done as the caller: every call goes to the Kubernetes API with the caller's own
 * token (a SandboxClaim to create, the served Sandbox to read, the lifecycle, exec and files
 * subresources), so kube-apiserver and sandbox-apiserver authorize each one exactly as they
 * would a kubectl call of the same user. Nothing here acts with the server's own rights.
 */

/** Where e2b's own fields of a sandbox live on its SandboxClaim. */
export const E2B_ANNOTATIONS = {
  /** The caller's metadata map, as JSON. */
  metadata: 'e2b.sandbox-scale.io/metadata',
} as const;
/** Every claim e2b made carries it, so `kubectl get sandboxclaims -l e2b.sandbox-scale.io/created-by=e2b` finds them. */
export const E2B_CREATED_LABEL = 'e2b.sandbox-scale.io/created-by';

/** The largest metadata map kept on a claim (annotations share 256 KiB per object). */
const MAX_METADATA_BYTES = 16 * 1024;
const MetadataSchema = z.record(z.string(), z.string());

/** The status and words e2b's SDKs should see for an error of the SDK's calls. */
function statusOf(err: unknown): { status: number; message: string } | undefined {
  if (!isSdkError(err) || !(err instanceof Error)) return undefined;
  const message = err.message;
  if (isNotFound(err)) return { status: 404, message };
  if (isForbidden(err)) return { status: 403, message };
  if (isUnauthorized(err)) return { status: 401, message };
  if (isAlreadyExists(err)) return { status: 409, message };
  if (isBadRequest(err) || isWrongFileKind(err)) return { status: 400, message };
  if (isTooLarge(err)) return { status: 413, message };
  if (isClaimTimeout(err) || isDeadlineExceeded(err)) return { status: 504, message };
  if (isClaimFailed(err) || isUnavailable(err)) return { status: 503, message };
  // any other answer of the API keeps its status and words (a 429 of a fair share, a node's 502)
  if (err instanceof ApiError && err.code >= 400 && err.code < 600) return { status: err.code, message };
  return undefined;
}

/** An SDK error as the control plane answers it; anything else stays unexpected (a 500, logged). */
export function asApiError(err: unknown): unknown {
  const s = statusOf(err);
  return s === undefined ? err : new E2bApiError(s.status, s.message, s.status === 503 ? 1 : undefined);
}

async function translated<T>(f: () => Promise<T>, as: (err: unknown) => unknown, onUnexpected?: (err: unknown) => void): Promise<T> {
  try {
    return await f();
  } catch (err) {
    const answered = as(err);
    if (answered === err && !(err instanceof E2bApiError)) onUnexpected?.(err);
    throw answered;
  }
}

function metadataOf(claim: ClaimObject | undefined): Record<string, string> {
  const raw = claim?.metadata.annotations?.[E2B_ANNOTATIONS.metadata];
  if (raw === undefined) return {};
  try {
    const r = MetadataSchema.safeParse(JSON.parse(raw));
    return r.success ? r.data : {};
  } catch {
    return {};
  }
}

const isPaused = (s: SandboxObject): boolean => (s.metadata.labels?.[SANDBOX_LABELS.phase] ?? '').toLowerCase() === 'paused';

/** A served Sandbox, the claim that holds it (if any) and what its node measured (if read) as e2b reports a sandbox. */
export function e2bSandboxOf(s: SandboxObject, claim: ClaimObject | undefined, now: Date, stats?: SandboxStats): E2bSandbox {
  const started = new Date(s.metadata.creationTimestamp ?? claim?.metadata.creationTimestamp ?? now.toISOString());
  const shutdown = claim?.spec?.lifecycle?.shutdownTime;
  return {
    sandboxID: s.metadata.name,
    templateID: claim?.spec?.warmPoolRef?.name ?? '',
    // the node's own word when it was asked; the served phase lags it by a publish
    state: (stats?.paused ?? isPaused(s)) ? 'paused' : 'running',
    startedAt: started,
    // a sandbox no claim ends runs until it is deleted: e2b has no word for that, so a far end
    endAt: shutdown !== undefined ? new Date(shutdown) : new Date(started.getTime() + 10 * 365 * 24 * 3_600_000),
    metadata: metadataOf(claim),
    cpuCount: stats?.cpuCount ?? 0,
    memoryMB: Math.round((stats?.memTotalBytes ?? 0) / (1024 * 1024)),
    diskSizeMB: 0,
  };
}

function matches(s: E2bSandbox, f: ListFilter): boolean {
  if (f.states !== undefined && !f.states.includes(s.state)) return false;
  if (f.template !== undefined && s.templateID !== f.template) return false;
  if (f.startedAfter !== undefined && s.startedAt <= f.startedAfter) return false;
  for (const [k, v] of Object.entries(f.metadata ?? {})) if (s.metadata[k] !== v) return false;
  return true;
}

/**
 * What the sandbox's node says of it now (paused or not, its size), as the caller reads it:
 * `gone` when the node no longer has it, undefined when it could not be asked (a sandbox made
 * without a claim, a node out of reach), so the served object's own word stands.
 */
export async function statsOf(client: SandboxClient, namespace: string, name: string): Promise<SandboxStats | 'gone' | undefined> {
  try {
    return await client.sandbox(name, namespace).stats();
  } catch (err) {
    return isNotFound(err) ? 'gone' : undefined;
  }
}

/** The control-plane verbs of one caller in its namespace. */
export class CallerBackend implements E2bBackend {
  constructor(
    private readonly client: SandboxClient,
    private readonly namespace: string,
    private readonly now: () => Date = () => new Date(),
  ) {}

  create(r: Parameters<E2bBackend['create']>[0]): Promise<E2bSandbox> {
    return translated(async () => {
      if (Object.keys(r.envVars).length > 0)
        throw new E2bApiError(400, 'not supported here: envVars on create (pass envs to each command instead)');
      const metadata = JSON.stringify(r.metadata);
      if (Buffer.byteLength(metadata) > MAX_METADATA_BYTES)
        throw new E2bApiError(400, `metadata is larger than ${MAX_METADATA_BYTES} bytes as JSON`);
      const startedAt = this.now();
      const endAt = new Date(startedAt.getTime() + r.timeoutSeconds * 1000);
      // with an Idempotency-Key the claim's name is the key's: a create sent again finds the first's claim
      const name = r.idempotencyKey !== undefined ? idempotentName(r.idempotencyKey) : undefined;
      let sb: Sandbox;
      try {
        sb = await this.client.claim({
          pool: r.templateID,
          namespace: this.namespace,
          withToken: false,
          shutdownTime: endAt,
          labels: { [E2B_CREATED_LABEL]: 'e2b' },
          annotations: { [E2B_ANNOTATIONS.metadata]: metadata },
          ...(name !== undefined ? { name } : {}),
        });
      } catch (err) {
        if (name === undefined || !isAlreadyExists(err)) throw err;
        const first = await this.client.getClaim(name, { namespace: this.namespace });
        if (first.spec?.warmPoolRef?.name !== r.templateID)
          throw new E2bApiError(
            409,
            `Idempotency-Key was used for a sandbox of another template (${first.spec?.warmPoolRef?.name ?? 'none'})`,
          );
        // the first create may still be waiting on its claim: this one waits on the same
        await this.client.fromClaim(name, { namespace: this.namespace, wait: true });
        const shutdown = first.spec?.lifecycle?.shutdownTime;
        return {
          ...e2bSandboxOf({ metadata: { name, creationTimestamp: first.metadata.creationTimestamp } }, first, startedAt),
          state: 'running',
          ...(shutdown !== undefined ? { endAt: new Date(shutdown) } : {}),
        };
      }
      // Ready: the claim is bound and its sandbox served, running; the answer needs nothing more read
      return {
        sandboxID: sb.name,
        templateID: r.templateID,
        state: 'running',
        startedAt,
        endAt,
        metadata: r.metadata,
        cpuCount: 0,
        memoryMB: 0,
        diskSizeMB: 0,
      };
    }, asApiError);
  }

  async #claimOf(name: string): Promise<ClaimObject | undefined> {
    try {
      return await this.client.getClaim(name, { namespace: this.namespace });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async #servedOf(name: string): Promise<SandboxObject | undefined> {
    try {
      return await this.client.getSandbox(name, { namespace: this.namespace });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  get(id: string): Promise<E2bSandbox | undefined> {
    return translated(async () => {
      const [served, claim, stats] = await Promise.all([this.#servedOf(id), this.#claimOf(id), statsOf(this.client, this.namespace, id)]);
      // a sandbox its node no longer knows is gone, though the API serves it until the node publishes
      // again; so is one whose claim is being deleted (killed), though its node lets go of it after
      if (served === undefined || stats === 'gone' || claim?.metadata.deletionTimestamp !== undefined) return undefined;
      return e2bSandboxOf(served, claim, this.now(), stats);
    }, asApiError);
  }

  list(f: ListFilter): Promise<{ items: E2bSandbox[]; nextToken?: string }> {
    return translated(async () => {
      const [served, claims] = await Promise.all([
        this.client.listSandboxes({ namespace: this.namespace }),
        this.client.listClaims({ namespace: this.namespace }),
      ]);
      const claimOf = new Map(claims.map((c) => [c.metadata.name, c]));
      const now = this.now();
      const all = served
        .map((s) => e2bSandboxOf(s, claimOf.get(s.metadata.name), now))
        .filter((s) => matches(s, f))
        .sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime() || a.sandboxID.localeCompare(b.sandboxID));
      if (f.order === 'desc') all.reverse();
      const start = f.nextToken !== undefined ? Number.parseInt(f.nextToken, 10) : 0;
      if (!Number.isSafeInteger(start) || start < 0) throw new E2bApiError(400, 'nextToken is not one this server gave');
      const end = start + (f.limit ?? MAX_LIST_LIMIT);
      return { items: all.slice(start, end), ...(end < all.length ? { nextToken: String(end) } : {}) };
    }, asApiError);
  }

  kill(id: string): Promise<boolean> {
    return translated(async () => {
      // a sandbox its node let go of is gone for e2b, though the API lists it until the next publish
      if ((await this.get(id)) === undefined) return false;
      return this.client.sandbox(id, this.namespace).release();
    }, asApiError);
  }

  setTimeout(id: string, seconds: number): Promise<void> {
    return translated(async () => {
      await this.client.setShutdownTime(id, new Date(this.now().getTime() + seconds * 1000), { namespace: this.namespace });
    }, asApiError);
  }

  pause(id: string): Promise<boolean> {
    return translated(async () => {
      const s = await this.get(id);
      if (s === undefined) throw new E2bApiError(404, `sandbox "${id}" not found`);
      if (s.state === 'paused') return false;
      await this.client.sandbox(id, this.namespace).pause();
      return true;
    }, asApiError);
  }

  connect(id: string, timeoutSeconds: number): Promise<{ sandbox: E2bSandbox; resumed: boolean }> {
    return translated(async () => {
      const s = await this.get(id);
      if (s === undefined) throw new E2bApiError(404, `sandbox "${id}" not found`);
      const resumed = s.state === 'paused';
      if (resumed) await this.client.sandbox(id, this.namespace).resume();
      // connect only ever moves the end later
      const wanted = new Date(this.now().getTime() + timeoutSeconds * 1000);
      let endAt = s.endAt;
      if (wanted > s.endAt && (await this.#claimOf(id)) !== undefined) {
        await this.client.setShutdownTime(id, wanted, { namespace: this.namespace });
        endAt = wanted;
      }
      return { sandbox: { ...s, state: 'running', endAt }, resumed };
    }, asApiError);
  }

  snapshot(id: string, name: string | undefined): Promise<SnapshotInfo> {
    return translated(async () => {
      const snap = await this.client.sandbox(id, this.namespace).snapshot(name !== undefined ? { name } : {});
      return { snapshotID: snapshotIdOf(id, snap.snapshotID), names: snap.name !== undefined ? [snap.name] : [] };
    }, asApiError);
  }

  listSnapshots(sandboxID: string | undefined): Promise<SnapshotInfo[]> {
    return translated(async () => {
      const names =
        sandboxID !== undefined
          ? [sandboxID]
          : (await this.client.listSandboxes({ namespace: this.namespace })).slice(0, MAX_LIST_LIMIT).map((s) => s.metadata.name);
      const out: SnapshotInfo[] = [];
      // a few sandboxes at once: each is a call through to its node
      for (let i = 0; i < names.length; i += SNAPSHOT_LIST_FANOUT) {
        const pages = await Promise.all(
          names.slice(i, i + SNAPSHOT_LIST_FANOUT).map(async (name) => {
            try {
              return (await this.client.sandbox(name, this.namespace).snapshots()).map((s) => ({
                snapshotID: snapshotIdOf(name, s.snapshotID),
                names: s.name !== undefined ? [s.name] : [],
              }));
            } catch (err) {
              // one that is gone, or made without a claim, has none to show
              if (isNotFound(err) || isBadRequest(err)) return [];
              throw err;
            }
          }),
        );
        out.push(...pages.flat());
      }
      return out;
    }, asApiError);
  }

  deleteSnapshot(snapshotID: string): Promise<boolean> {
    return translated(async () => {
      const at = snapshotID.indexOf(SNAPSHOT_ID_SEPARATOR);
      if (at <= 0) return false;
      try {
        await this.client.sandbox(snapshotID.slice(0, at), this.namespace).deleteSnapshot(snapshotID.slice(at + 1));
        return true;
      } catch (err) {
        if (isNotFound(err)) return false;
        throw err;
      }
    }, asApiError);
  }

  metrics(id: string): Promise<SandboxMetric[]> {
    return translated(async () => {
      const stats = await this.client.sandbox(id, this.namespace).stats();
      const at = stats.measuredAt ? new Date(stats.measuredAt) : this.now();
      return [
        {
          timestamp: at.toISOString(),
          timestampUnix: Math.floor(at.getTime() / 1000),
          cpuCount: stats.cpuCount ?? 0,
          cpuUsedPct: 0,
          memUsed: stats.memUsedBytes ?? 0,
          memTotal: stats.memTotalBytes ?? 0,
          memCache: 0,
          diskUsed: 0,
          diskTotal: 0,
        },
      ];
    }, asApiError);
  }

  fork(id: string, count: number, timeoutSeconds: number): Promise<E2bSandbox[]> {
    return translated(async () => {
      const parent = await this.get(id);
      if (parent === undefined) throw new E2bApiError(404, `sandbox "${id}" not found`);
      const children = await this.client.sandbox(id, this.namespace).fork({ count, ttlSeconds: timeoutSeconds });
      const startedAt = this.now();
      return children.map((c) => ({
        ...parent,
        sandboxID: c.name,
        state: 'running' as const,
        startedAt,
        endAt: new Date(startedAt.getTime() + timeoutSeconds * 1000),
      }));
    }, asApiError);
  }
}

/** Sandboxes whose checkpoints are read at once when snapshots of every sandbox are listed. */
const SNAPSHOT_LIST_FANOUT = 8;
/** Never in a Kubernetes name: e2b's snapshot id is the sandbox's name and its node's checkpoint id, joined by it. */
const SNAPSHOT_ID_SEPARATOR = '~';
const snapshotIdOf = (sandbox: string, checkpoint: string): string => `${sandbox}${SNAPSHOT_ID_SEPARATOR}${checkpoint}`;

/** The claim name of an Idempotency-Key: a digest, so any key makes a valid name and says nothing of itself. */
function idempotentName(key: string): string {
  return `e2b-${createHash('sha256').update(key).digest('hex').slice(0, 20)}`;
}

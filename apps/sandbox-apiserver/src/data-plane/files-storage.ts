import { BadRequestError, formatRfc3339Seconds, SANDBOX_API_VERSION, SANDBOX_GROUP, StatusError } from '@sandbox-scale/scale-core';
import { AGENT_CHUNK_BYTES, type AgentStat } from '@sandbox-scale/sandboxd-client';
import { SANDBOX_RESOURCE } from '../storage/sandbox-storage';
import type { AuditOutcome, DataPlaneAudit } from './data-plane-audit';
import { dataPlaneStatusError, type DataPlaneCall } from './data-plane-errors';
import { agentSignals } from './agent-signals';
import { extractToGuest, tarFromGuest } from './guest-tar';
import { parentOf } from './guest-path';
import { reach, type AgentSession, type SandboxResolver } from './reach';

/** Default of --max-file-bytes: the largest file (or tar stream) one PUT writes. */
export const DEFAULT_MAX_FILE_BYTES = 256 * 1024 * 1024;

export const TAR_MEDIA_TYPE = 'application/x-tar';
export const OCTET_STREAM = 'application/octet-stream';

export interface SandboxFileInfo {
  readonly apiVersion: typeof SANDBOX_API_VERSION;
  readonly kind: 'SandboxFileInfo';
  readonly path: string;
  readonly type: AgentStat['kind'];
  readonly size: number;
  /** Permission bits (and setuid, setgid, sticky). */
  readonly mode: number;
  readonly mtime: string;
}

/** What a GET answers: the bytes of a file or a tar stream, or a JSON document (a listing, a stat). */
export type FilesReply =
  | { readonly kind: 'bytes'; readonly contentType: typeof OCTET_STREAM | typeof TAR_MEDIA_TYPE; readonly stream: AsyncIterable<Buffer> }
  | { readonly kind: 'json'; readonly body: Record<string, unknown> };

/** Who asks, and the signal that fires when they hang up. */
export interface Caller {
  readonly user: string;
  readonly signal?: AbortSignal;
}

export interface FileRead {
  readonly namespace: string;
  readonly name: string;
  /** Normalised guest path (guestPath). */
  readonly path: string;
  readonly stat: boolean;
  readonly tar: boolean;
}

export interface FileWrite {
  readonly namespace: string;
  readonly name: string;
  readonly path: string;
  readonly tar: boolean;
  readonly mode?: number;
  /** The request's Content-Length, when it sent one. */
  readonly contentLength?: number;
  readonly body: AsyncIterable<Buffer>;
}

export interface FileDelete {
  readonly namespace: string;
  readonly name: string;
  readonly path: string;
  readonly recursive: boolean;
}

export function fileInfoOf(path: string, s: AgentStat): SandboxFileInfo {
  return {
    apiVersion: SANDBOX_API_VERSION,
    kind: 'SandboxFileInfo',
    path,
    type: s.kind,
    size: s.size,
    mode: s.mode & 0o7777,
    mtime: formatRfc3339Seconds(new Date(s.mtimeEpochSecs * 1000)),
  };
}

function tooLarge(c: { namespace: string; name: string; path: string }, max: number): StatusError {
  return new StatusError(
    'RequestEntityTooLarge',
    `write ${c.path} in sandbox ${c.namespace}/${c.name}: the body is over --max-file-bytes (${max} bytes); nothing was written`,
    { name: c.name, group: SANDBOX_GROUP, kind: SANDBOX_RESOURCE.resource },
  );
}

/**
 * The body in chunks of AGENT_CHUNK_BYTES (a request arrives in pieces of 16-64 KiB; the agent
 * takes one base64 frame per chunk, so fewer, fuller frames cost less on both ends), counted into
 * `outcome.bytes`; past `max` bytes it fails with a 413 before the chunk that crossed it is sent.
 */
async function* bounded(
  body: AsyncIterable<Buffer>,
  max: number,
  outcome: AuditOutcome,
  onOver: () => StatusError,
): AsyncGenerator<Buffer> {
  let total = 0;
  let held: Buffer[] = [];
  let heldBytes = 0;
  for await (const chunk of body) {
    total += chunk.length;
    outcome.bytes = total;
    if (total > max) throw onOver();
    held.push(chunk);
    heldBytes += chunk.length;
    if (heldBytes >= AGENT_CHUNK_BYTES) {
      yield held.length === 1 ? chunk : Buffer.concat(held, heldBytes);
      held = [];
      heldBytes = 0;
    }
  }
  if (heldBytes > 0) yield Buffer.concat(held, heldBytes);
}

/** The chunks of a reply stream, counted into `outcome.bytes`. */
async function* counted(stream: AsyncIterable<Buffer>, outcome: AuditOutcome): AsyncGenerator<Buffer> {
  outcome.bytes = 0;
  for await (const chunk of stream) {
    outcome.bytes += chunk.length;
    yield chunk;
  }
}

/**
 * GET/PUT/DELETE sandboxes/{name}/files?path=: files of the guest, through one agent connection
 * per request. Bodies stream both ways, never held whole: a PUT goes to the agent in 256 KiB
 * frames as it arrives, a GET is written out as the agent sends it, at the pace the caller reads.
 */
export class FilesStorage {
  constructor(
    private readonly resolver: SandboxResolver,
    private readonly audit: DataPlaneAudit,
    private readonly maxFileBytes: number = DEFAULT_MAX_FILE_BYTES,
  ) {}

  /**
   * A file's bytes, a directory's listing, a stat, or a tar stream of either, handed to `send`
   * (which writes it to the caller); the agent connection lives until `send` is done.
   */
  async read(r: FileRead, caller: Caller, send: (reply: FilesReply) => Promise<void>): Promise<void> {
    const op = r.stat ? 'stat' : 'read';
    const fields = { user: caller.user, namespace: r.namespace, name: r.name, path: r.path, ...(r.tar ? { tar: true } : {}) };
    await this.audit.observe(op, fields, (outcome) =>
      this.#withAgent(r, `read ${r.path}`, caller, outcome, async (conn) => {
        const signals = agentSignals(caller.signal);
        if (r.tar)
          return send({ kind: 'bytes', contentType: TAR_MEDIA_TYPE, stream: counted(tarFromGuest(conn, r.path, signals), outcome) });
        const info = await conn.stat(r.path, signals.call());
        if (r.stat) return send({ kind: 'json', body: { ...fileInfoOf(r.path, info) } });
        if (info.kind === 'dir') {
          outcome.op = 'list';
          const items = (await conn.list(r.path, signals.call())).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
          return send({ kind: 'json', body: { apiVersion: SANDBOX_API_VERSION, kind: 'SandboxFileList', path: r.path, items } });
        }
        if (info.kind === 'other') throw new BadRequestError(`read ${r.path} in sandbox ${r.namespace}/${r.name}: not a regular file`);
        return send({ kind: 'bytes', contentType: OCTET_STREAM, stream: counted(conn.readFile(r.path, signals.transfer), outcome) });
      }),
    );
  }

  /**
   * Writes the body to the path atomically (parents created), or extracts a tar stream under it.
   * A body past --max-file-bytes is a 413 and writes nothing: a Content-Length over it is refused
   * before the node is asked, and a body that grows past it ends the agent connection before the
   * end of the data, so the guest drops its temporary file.
   */
  async write(w: FileWrite, caller: Caller): Promise<SandboxFileInfo> {
    const fields = { user: caller.user, namespace: w.namespace, name: w.name, path: w.path, ...(w.tar ? { tar: true } : {}) };
    return this.audit.observe(
      'write',
      fields,
      async (outcome) => {
        if (w.path === '/' && !w.tar) throw new BadRequestError(`write / in sandbox ${w.namespace}/${w.name}: the root is a directory`);
        if (w.contentLength !== undefined && w.contentLength > this.maxFileBytes) throw tooLarge(w, this.maxFileBytes);
        const body = bounded(w.body, this.maxFileBytes, outcome, () => tooLarge(w, this.maxFileBytes));
        return this.#withAgent(w, `write ${w.path}`, caller, outcome, async (conn) => {
          const signals = agentSignals(caller.signal);
          if (w.tar) await extractToGuest(conn, w.path, body, signals);
          else {
            if (parentOf(w.path) !== '/') await conn.mkdir(parentOf(w.path), { parents: true, ...signals.call() });
            await conn.writeFile(w.path, body, { ...(w.mode !== undefined ? { mode: w.mode } : {}), ...signals.transfer });
          }
          return fileInfoOf(w.path, await conn.stat(w.path, signals.call()));
        });
      },
      201,
    );
  }

  /** Removes a file, or a directory (its contents too with `recursive`); the root is never removed. */
  async remove(d: FileDelete, caller: Caller): Promise<Record<string, unknown>> {
    const fields = { user: caller.user, namespace: d.namespace, name: d.name, path: d.path, ...(d.recursive ? { recursive: true } : {}) };
    return this.audit.observe('delete', fields, async (outcome) => {
      if (d.path === '/') throw new BadRequestError(`delete / in sandbox ${d.namespace}/${d.name}: the sandbox's root is never removed`);
      await this.#withAgent(d, `delete ${d.path}`, caller, outcome, (conn) =>
        conn.remove(d.path, { recursive: d.recursive, ...agentSignals(caller.signal).call() }),
      );
      return {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Success',
        message: `deleted ${d.path} in sandbox ${d.namespace}/${d.name}`,
        details: { name: d.name, group: SANDBOX_GROUP, kind: SANDBOX_RESOURCE.resource },
      };
    });
  }

  /**
   * Opens the sandbox's agent (a 404 retried once with a fresh token), runs `fn` on it and closes
   * it. Any failure ends the connection first: a write cut short never reaches its end frame, so
   * nothing of it is kept.
   */
  async #withAgent<T>(
    where: { namespace: string; name: string },
    what: string,
    caller: Caller,
    outcome: AuditOutcome,
    fn: (conn: AgentSession) => Promise<T>,
  ): Promise<T> {
    const call: DataPlaneCall = { namespace: where.namespace, name: where.name, what };
    const signal = caller.signal;
    const conn = await reach(this.resolver, call, (s) => s.client.openAgent(s.id, s.token, agentSignals(signal).call()), {
      ...(signal ? { signal } : {}),
      where: (s) => Object.assign(outcome, { node: s.node, sandboxId: s.id }),
    });
    try {
      return await fn(conn);
    } catch (err) {
      conn.close();
      throw dataPlaneStatusError(err, outcome.node !== undefined ? { ...call, node: outcome.node } : call);
    } finally {
      conn.close();
    }
  }
}

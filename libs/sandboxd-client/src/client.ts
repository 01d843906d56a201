import type { Dispatcher } from 'undici';
import type { z } from 'zod';
import { normalizeBaseUrl, resolveNodeAddr, type AddressRefusal, type KnownNodeAddresses } from './addresses';
import type { CallDeadline } from './deadline-signals';
import { capacityFrom429, capacityFromRedirect, decodeJson, carriesId, hasId, httpError, parseJson, validate } from './decode';
import { SandboxdArgumentError, asNodeAtCapacity } from './errors';
import { followRedirect } from './redirects';
import {
  CheckpointReplySchema,
  CheckpointsReplySchema,
  ClaimReplySchema,
  ForkReplySchema,
  NodeInfoSchema,
  OwnerReplySchema,
  PeersReplySchema,
  PromoteReplySchema,
  RedirectReplySchema,
  RenewReplySchema,
  SandboxDetailSchema,
  SandboxesReplySchema,
  StatsSchema,
  type Checkpoint,
  type ClaimReply,
  type NodeInfo,
  type PromoteReply,
  type SandboxDetail,
  type SandboxRow,
  type Stats,
} from './replies';
import {
  encodeCheckpoint,
  encodeCheckpointClaim,
  encodeClaim,
  encodeFork,
  encodePools,
  encodePromote,
  type CheckpointClaimRequest,
  type CheckpointRequest,
  type ClaimRequest,
  type ForkRequest,
  type PoolSpec,
  type PromoteRequest,
  type TemplateKey,
} from './requests';
import { createSandboxdAgent, send, type Endpoint, type RawReply, type SendSpec } from './transport';
import type { Socket } from 'node:net';
import { AgentConnection } from './agent-connection';
import {
  AGENT_UPGRADE_PROTOCOL,
  EXEC_REPLY_LIMIT_BYTES,
  ExecReplySchema,
  PORT_UPGRADE_PROTOCOL,
  encodeExec,
  type ExecRequest,
  type ExecResult,
} from './data-plane';
import { openUpgrade } from './port-upgrade';

export interface SandboxdClientOptions {
  /** `http://host:port` or bare `host:port`; a trailing slash is trimmed. */
  baseUrl: string;
  /** Node token (root/fleet or tenant). Sent only when non-empty; never logged. */
  token?: string;
  /**
   * The node token of the node at a base URL, asked on every call (wins over `token`): per-node
   * root tokens (NodeTokens.forAddress), so a redirect to another node carries that node's
   * token. It may throw (NoNodeTokenError) to refuse the call before anything is sent.
   */
  tokenFor?: (baseUrl: string) => string;
  /** Shared keep-alive dispatcher (see createSandboxdAgent). Without one the client owns an agent. */
  dispatcher?: Dispatcher;
  /** false sends `Connection: close` on every request (for measurements only). Default true. */
  keepAlive?: boolean;
  /** Follow claim redirects by default (one hop). Default false: a redirect is NodeAtCapacityError. */
  followRedirects?: boolean;
  /**
   * When set, a redirect (claim, deleteTemplate) is followed only to addresses these inventories
   * advertise; the rest are skipped and told to `onRefused`. Every control-plane client sets it.
   */
  known?: KnownNodeAddresses;
  onRefused?: (reason: AddressRefusal) => void;
}

export interface CallOptions {
  /** There is no default timeout: bound the call with `AbortSignal.timeout(ms)` or `deadline` if needed. */
  signal?: AbortSignal;
  /** A shared bound from DeadlineSignals, cheaper per call than a timeout signal; with `signal` too, the first to fire ends the call. */
  deadline?: CallDeadline;
  /** Overrides the client's token for this call ('' sends no Authorization header). */
  token?: string;
}

export interface ClaimOptions extends CallOptions {
  followRedirects?: boolean;
}

/** A claim plus where it lives: `nodeUrl` answered it, `ownerUrl` owns it (sandbox verbs go there). */
export type ClaimResult = ClaimReply & { nodeUrl: string; ownerUrl: string };

export type TemplateDeleteResult = { deleted: true; nodeUrl: string } | { deleted: false; candidates: readonly string[] };

const is2xx = (s: number): boolean => s >= 200 && s < 300;

/** A call's options plus its own success cap (exec replies are larger than the rest). */
type SendOptions = CallOptions & { successLimitBytes?: number; holdReplyBytes?: (bytes: number) => void };

export interface ExecCallOptions extends CallOptions {
  /**
   * Called with each chunk's size as the reply is read, before the chunk is kept: a caller that
   * bounds the memory its replies hold throws here, and the read stops at once with that error
   * (the connection is closed, so the node kills the command).
   */
  holdReplyBytes?: (bytes: number) => void;
  /** The largest reply read (default EXEC_REPLY_LIMIT_BYTES); past it the call is a ReplyTooLargeError. */
  replyLimitBytes?: number;
}

interface ClaimCall {
  op: string;
  path: string;
  body: object;
  ok: (status: number) => boolean;
}

/**
 * Typed client of one sandboxd node, safe for concurrent use. Build
 * one per node over a shared dispatcher (`SandboxdClientSet` does that).
 */
export class SandboxdClient {
  readonly baseUrl: string;
  readonly #token: string;
  readonly #tokenFor: ((baseUrl: string) => string) | undefined;
  readonly #endpoint: Endpoint;
  readonly #ownsDispatcher: boolean;
  readonly #keepAlive: boolean;
  readonly #follow: boolean;
  readonly #known: KnownNodeAddresses | undefined;
  readonly #onRefused: ((reason: AddressRefusal) => void) | undefined;

  constructor(opts: SandboxdClientOptions) {
    this.baseUrl = normalizeBaseUrl(opts.baseUrl);
    const url = new URL(this.baseUrl);
    this.#token = opts.token ?? '';
    this.#tokenFor = opts.tokenFor;
    this.#ownsDispatcher = opts.dispatcher === undefined;
    this.#endpoint = { dispatcher: opts.dispatcher ?? createSandboxdAgent(), origin: url.origin, prefix: url.pathname.replace(/\/+$/, '') };
    this.#keepAlive = opts.keepAlive ?? true;
    this.#follow = opts.followRedirects ?? false;
    this.#known = opts.known;
    this.#onRefused = opts.onRefused;
  }

  /** The redirect candidates this client may follow: all of them, or those of known, non-stale inventories. */
  #followable(candidates: readonly string[]): string[] {
    const known = this.#known;
    if (known === undefined) return [...candidates];
    return candidates.filter((url) => {
      const r = known.check(url);
      if ('refused' in r) this.#onRefused?.(r.refused);
      return !('refused' in r);
    });
  }

  /** A client of another node with the same token, dispatcher and settings. */
  forNode(baseUrl: string): SandboxdClient {
    return new SandboxdClient({
      baseUrl,
      token: this.#token,
      ...(this.#tokenFor ? { tokenFor: this.#tokenFor } : {}),
      dispatcher: this.#endpoint.dispatcher,
      keepAlive: this.#keepAlive,
      followRedirects: this.#follow,
      ...(this.#known ? { known: this.#known } : {}),
      ...(this.#onRefused ? { onRefused: this.#onRefused } : {}),
    });
  }

  /** Closes the dispatcher if this client created it; a shared one is left to its owner. */
  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#endpoint.dispatcher.close();
  }

  /**
   * `POST /v1/claim`. A 429, or a 200 with no id (redirect-only), is NodeAtCapacityError with
   * the candidates; with `followRedirects` the claim is retried once at the candidates.
   */
  async claim(req: ClaimRequest, opts: ClaimOptions = {}): Promise<ClaimResult> {
    const body = encodeClaim(req);
    return this.#claimWithRedirects('claim', '/v1/claim', body, opts, (o) => o === 200);
  }

  /** `POST /v1/checkpoints/{id}/claim`: a new sandbox branched from the checkpoint. */
  async claimCheckpoint(checkpointId: string, req: CheckpointClaimRequest = {}, opts: ClaimOptions = {}): Promise<ClaimResult> {
    const path = `/v1/checkpoints/${pathId('claimCheckpoint', checkpointId)}/claim`;
    return this.#claimWithRedirects('claimCheckpoint', path, encodeCheckpointClaim(req), opts, is2xx);
  }

  /** Destroys the VM. 404 (already gone) is success. Pass the sandbox token, or use the root token. */
  async release(id: string, opts: CallOptions = {}): Promise<void> {
    const reply = await this.#send('release', 'POST', `/v1/sandboxes/${pathId('release', id)}/release`, undefined, opts);
    if (reply.statusCode !== 204 && reply.statusCode !== 404) throw httpError('release', reply);
  }

  async hibernate(id: string, opts: CallOptions = {}): Promise<void> {
    await this.#expect204('hibernate', `/v1/sandboxes/${pathId('hibernate', id)}/hibernate`, opts);
  }

  async wake(id: string, opts: CallOptions = {}): Promise<void> {
    await this.#expect204('wake', `/v1/sandboxes/${pathId('wake', id)}/wake`, opts);
  }

  /** Sets the deadline to now + TTL (0 → node default); the returned deadline is authoritative. */
  async renew(id: string, ttlSeconds = 0, opts: CallOptions = {}): Promise<{ deadline: Date | null }> {
    const body = ttlSeconds ? { ttl_seconds: ttlSeconds } : {};
    const reply = await this.#send('renew', 'POST', `/v1/sandboxes/${pathId('renew', id)}/renew`, body, opts);
    if (!is2xx(reply.statusCode)) throw httpError('renew', reply);
    return decodeJson('renew', reply, RenewReplySchema);
  }

  /** All or nothing: `count` children, or an error and none. 429 is NodeAtCapacityError. */
  async fork(id: string, req: ForkRequest, opts: CallOptions = {}): Promise<ClaimResult[]> {
    const reply = await this.#send('fork', 'POST', `/v1/sandboxes/${pathId('fork', id)}/fork`, encodeFork(req), opts);
    if (reply.statusCode === 429) throw capacityFrom429(reply);
    if (!is2xx(reply.statusCode)) throw httpError('fork', reply);
    return decodeJson('fork', reply, ForkReplySchema).children.map((c) => this.#located(c, this.baseUrl));
  }

  async promote(id: string, req: PromoteRequest, opts: CallOptions = {}): Promise<PromoteReply> {
    const reply = await this.#send('promote', 'POST', `/v1/sandboxes/${pathId('promote', id)}/promote`, encodePromote(req), opts);
    if (!is2xx(reply.statusCode)) throw httpError('promote', reply);
    return decodeJson('promote', reply, PromoteReplySchema);
  }

  /** `DELETE /v1/templates`: 204, or (on a mesh) a redirect to the template's owners. */
  async deleteTemplate(key: TemplateKey, opts: ClaimOptions = {}): Promise<TemplateDeleteResult> {
    const first = await this.#deleteTemplateAt(this, key, false, opts);
    if (first.deleted || !(opts.followRedirects ?? this.#follow)) return first;
    for (const url of this.#followable(first.candidates)) {
      try {
        const r = await this.#deleteTemplateAt(this.forNode(url), key, true, opts);
        if (r.deleted) return r;
      } catch (err) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        if (opts.deadline?.aborted) throw opts.deadline.reason;
        void err;
      }
    }
    return this.#deleteTemplateAt(this, key, true, opts);
  }

  async checkpoint(id: string, req: CheckpointRequest = {}, opts: CallOptions = {}): Promise<Checkpoint> {
    const reply = await this.#send(
      'checkpoint',
      'POST',
      `/v1/sandboxes/${pathId('checkpoint', id)}/checkpoint`,
      encodeCheckpoint(req),
      opts,
    );
    if (!is2xx(reply.statusCode)) throw httpError('checkpoint', reply);
    return decodeJson('checkpoint', reply, CheckpointReplySchema).checkpoint;
  }

  /** This node's checkpoints, newest first (a tenant sees only its own). */
  async checkpoints(opts: CallOptions = {}): Promise<Checkpoint[]> {
    return (await this.#getJson('checkpoints', '/v1/checkpoints', CheckpointsReplySchema, opts)).checkpoints;
  }

  /** 404 (already gone, or not this tenant's) is success. */
  async deleteCheckpoint(id: string, opts: CallOptions = {}): Promise<void> {
    const reply = await this.#send('deleteCheckpoint', 'DELETE', `/v1/checkpoints/${pathId('deleteCheckpoint', id)}`, undefined, opts);
    if (reply.statusCode !== 204 && reply.statusCode !== 404) throw httpError('deleteCheckpoint', reply);
  }

  /** Live claims, sorted by id; `claimRef` keeps only rows recorded under exactly that reference. */
  async sandboxes(claimRef?: string, opts: CallOptions = {}): Promise<SandboxRow[]> {
    const query = claimRef ? `?claim_ref=${encodeURIComponent(claimRef)}` : '';
    return (await this.#getJson('sandboxes', `/v1/sandboxes${query}`, SandboxesReplySchema, opts)).sandboxes;
  }

  /** Root only: one row, plus the sandbox token when the node has an api_token. */
  async sandbox(id: string, opts: CallOptions = {}): Promise<SandboxDetail> {
    return this.#getJson('sandbox', `/v1/sandboxes/${pathId('sandbox', id)}`, SandboxDetailSchema, opts);
  }

  async stats(id: string, opts: CallOptions = {}): Promise<Stats> {
    return this.#getJson('stats', `/v1/sandboxes/${pathId('stats', id)}/stats`, StatsSchema, opts);
  }

  /** Sandbox token: the owning node's address, if this node owns the sandbox (else 404). */
  async owner(id: string, opts: CallOptions = {}): Promise<{ ownerAddr: string }> {
    return this.#getJson('owner', `/v1/sandboxes/${pathId('owner', id)}/owner`, OwnerReplySchema, opts);
  }

  async info(opts: CallOptions = {}): Promise<NodeInfo> {
    return this.#getJson('info', '/v1/info', NodeInfoSchema, opts);
  }

  async peers(opts: CallOptions = {}): Promise<string[]> {
    return (await this.#getJson('peers', '/v1/peers', PeersReplySchema, opts)).peers;
  }

  /**
   * `PUT /v1/pools`: REPLACES the node's whole pool set. Every pool left out of `pools` is
   * drained (its warm VMs destroyed); `[]` removes them all. To change one pool, send all.
   */
  async setPools(pools: readonly PoolSpec[], opts: CallOptions = {}): Promise<NodeInfo> {
    return this.#jsonVerb('setPools', 'PUT', '/v1/pools', encodePools(pools), opts);
  }

  /** Cordons the node: claims get 429, warm VMs are destroyed, live claims run on. */
  async drain(opts: CallOptions = {}): Promise<NodeInfo> {
    return this.#jsonVerb('drain', 'POST', '/v1/drain', undefined, opts);
  }

  /** Lifts a drain; refill starts at once. */
  async undrain(opts: CallOptions = {}): Promise<NodeInfo> {
    return this.#jsonVerb('undrain', 'DELETE', '/v1/drain', undefined, opts);
  }

  /** The spec's name for undrain. */
  async uncordon(opts: CallOptions = {}): Promise<NodeInfo> {
    return this.undrain(opts);
  }

  /** Raw Prometheus text (root only). */
  async metrics(opts: CallOptions = {}): Promise<string> {
    return this.#getText('metrics', '/metrics', opts);
  }

  async healthz(opts: CallOptions = {}): Promise<string> {
    return this.#getText('healthz', '/healthz', opts);
  }

  // --- the data plane: sandbox-scoped, `token` is the sandbox's own (or the root token by id) ---

  /**
   * `POST /v1/sandboxes/{id}/exec`: runs the command to completion and returns its exit code and
   * output (a non-zero exit is a result, not an error). Any other status is a SandboxdHttpError:
   * 400 bad argv/cwd/command, 404, 409 failed sandbox, 413 output cap, 503 node exec memory
   * (Retry-After), 504 `timeoutSeconds` passed. Aborting the call hangs up, and the node kills the command.
   */
  async exec(id: string, token: string, req: ExecRequest, opts: ExecCallOptions = {}): Promise<ExecResult> {
    const path = `/v1/sandboxes/${pathId('exec', id)}/exec`;
    const { replyLimitBytes, ...call } = opts;
    const reply = await this.#send('exec', 'POST', path, encodeExec(req), {
      ...call,
      token,
      successLimitBytes: Math.min(replyLimitBytes ?? EXEC_REPLY_LIMIT_BYTES, EXEC_REPLY_LIMIT_BYTES),
    });
    if (reply.statusCode !== 200) throw httpError('exec', reply);
    return decodeJson('exec', reply, ExecReplySchema);
  }

  /** `GET /v1/sandboxes/{id}/agent` upgraded to `silkd`: a connection to the guest agent. */
  async openAgent(id: string, token: string, opts: CallOptions = {}): Promise<AgentConnection> {
    const path = `/v1/sandboxes/${pathId('openAgent', id)}/agent`;
    return new AgentConnection(await this.#upgrade('openAgent', path, AGENT_UPGRADE_PROTOCOL, token, opts));
  }

  /**
   * `GET /v1/sandboxes/{id}/ports/{port}` upgraded to `tcp`: the raw relayed socket to the guest
   * port, half-close working both ways. A refusal is a SandboxdHttpError (400 port, 401, 404,
   * 409, 426, 502 nothing listening). The signal bounds the opening; the socket is the caller's.
   */
  async openPort(id: string, token: string, port: number, opts: CallOptions = {}): Promise<Socket> {
    const path = `/v1/sandboxes/${pathId('openPort', id)}/ports/${encodeURIComponent(String(port))}`;
    return this.#upgrade('openPort', path, PORT_UPGRADE_PROTOCOL, token, opts);
  }

  #upgrade(operation: string, path: string, protocol: string, token: string, opts: CallOptions): Promise<Socket> {
    return openUpgrade({ operation, baseUrl: this.baseUrl, path, protocol, token, signal: opts.signal, deadline: opts.deadline });
  }

  async #claimWithRedirects(op: string, path: string, body: object, opts: ClaimOptions, ok: (s: number) => boolean): Promise<ClaimResult> {
    const call: ClaimCall = { op, path, body, ok };
    try {
      return await this.#claimAt(this, call, opts);
    } catch (err) {
      const redirect = asNodeAtCapacity(err);
      if (!(opts.followRedirects ?? this.#follow) || redirect === undefined || redirect.candidates.length === 0) throw err;
      const retry: ClaimCall = {
        ...call,
        body: { ...body, no_redirect: true, ...(redirect.requirePromoted ? { require_promoted: true } : {}) },
      };
      const attempt = (url: string): Promise<ClaimResult> => this.#claimAt(url === this.baseUrl ? this : this.forNode(url), retry, opts);
      return followRedirect(this.#followable(redirect.candidates), this.baseUrl, attempt, opts.signal);
    }
  }

  async #claimAt(node: SandboxdClient, call: ClaimCall, opts: CallOptions): Promise<ClaimResult> {
    const { op } = call;
    const reply = await node.#send(op, 'POST', call.path, call.body, opts);
    if (reply.statusCode === 429) throw capacityFrom429(reply);
    if (!call.ok(reply.statusCode)) throw httpError(op, reply);
    const parsed = parseJson(op, reply);
    if (!hasId(parsed)) {
      // throws MalformedReplyError naming the field
      if (carriesId(parsed)) validate(op, reply.statusCode, parsed, ClaimReplySchema);
      throw capacityFromRedirect(op, reply.statusCode, parsed, node.baseUrl);
    }
    return node.#located(validate(op, reply.statusCode, parsed, ClaimReplySchema), node.baseUrl);
  }

  #located(claim: ClaimReply, nodeUrl: string): ClaimResult {
    return { ...claim, nodeUrl, ownerUrl: resolveNodeAddr(claim.ownerAddr, nodeUrl) };
  }

  async #deleteTemplateAt(node: SandboxdClient, key: TemplateKey, noRedirect: boolean, opts: CallOptions): Promise<TemplateDeleteResult> {
    const q = new URLSearchParams({ template: key.template, net: key.net ?? 'none', size: key.size ?? 'small' });
    if (noRedirect) q.set('no_redirect', '1');
    const reply = await node.#send('deleteTemplate', 'DELETE', `/v1/templates?${q.toString()}`, undefined, opts);
    if (reply.statusCode === 204) return { deleted: true, nodeUrl: node.baseUrl };
    if (reply.statusCode !== 200) throw httpError('deleteTemplate', reply);
    const r = decodeJson('deleteTemplate', reply, RedirectReplySchema);
    return { deleted: false, candidates: r.redirect.map((a) => resolveNodeAddr(a, node.baseUrl)) };
  }

  async #expect204(op: string, path: string, opts: CallOptions): Promise<void> {
    const reply = await this.#send(op, 'POST', path, undefined, opts);
    if (reply.statusCode !== 204) throw httpError(op, reply);
  }

  async #jsonVerb(op: string, method: Dispatcher.HttpMethod, path: string, body: unknown, opts: CallOptions): Promise<NodeInfo> {
    const reply = await this.#send(op, method, path, body, opts);
    if (!is2xx(reply.statusCode)) throw httpError(op, reply);
    return decodeJson(op, reply, NodeInfoSchema);
  }

  async #getJson<S extends z.ZodType>(op: string, path: string, schema: S, opts: CallOptions): Promise<z.output<S>> {
    const reply = await this.#send(op, 'GET', path, undefined, opts);
    if (reply.statusCode !== 200) throw httpError(op, reply);
    return decodeJson(op, reply, schema);
  }

  async #getText(op: string, path: string, opts: CallOptions): Promise<string> {
    const reply = await this.#send(op, 'GET', path, undefined, opts);
    if (reply.statusCode !== 200) throw httpError(op, reply);
    return reply.body?.toString('utf8') ?? '';
  }

  #send(operation: string, method: Dispatcher.HttpMethod, path: string, body: unknown, opts: SendOptions): Promise<RawReply> {
    const spec: SendSpec = {
      operation,
      method,
      path,
      body,
      token: opts.token ?? (this.#tokenFor ? this.#tokenFor(this.baseUrl) : this.#token),
      signal: opts.signal,
      deadline: opts.deadline,
      keepAlive: this.#keepAlive,
      isSuccess: is2xx,
      ...(opts.successLimitBytes !== undefined ? { successLimitBytes: opts.successLimitBytes } : {}),
      ...(opts.holdReplyBytes !== undefined ? { holdReplyBytes: opts.holdReplyBytes } : {}),
    };
    return send(this.#endpoint, spec);
  }
}

/** Ids are path-escaped; an empty id is refused before anything is sent. */
function pathId(op: string, id: string): string {
  if (id === '') throw new SandboxdArgumentError(`${op}: empty id`);
  return encodeURIComponent(id);
}

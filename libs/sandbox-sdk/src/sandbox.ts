import { inspect } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { ANNOTATIONS, SANDBOX_GROUP } from '@sandbox-scale/scale-core';
import { z } from 'zod';
import { deadlineOf, wait, type CallOptions } from './deadline';
import { isNotFound, type RequestTarget } from './errors';
import { act, call, claimsPath, claimTarget, sandboxesPath, sandboxTarget, type SandboxAction } from './kube-api';
import { checkPort, listenForward, type ListenOptions, type PortForward } from './port-forward';
import { execIn, type ExecOptions, type ExecResult } from './sandbox-exec';
import { SandboxFiles } from './sandbox-files';
import { callOnSandbox, type SandboxScope } from './sandbox-retry';
import { openUpgrade } from './upgrade';

export interface SandboxRef {
  /** The served Sandbox's name: `kubectl get sandbox NAME`. */
  name: string;
  namespace: string;
  node: string;
  /** `host:port` of the sandbox on its node. */
  address: string;
  /** The sandbox's own bearer token (for its address); empty when not read. Never logged. */
  token: string;
  /** The SandboxClaim holding it, if it was claimed (fork children and restored ones have none). */
  claimName?: string;
  /** sandboxd's node-local claim id. */
  claimId?: string;
  /** The node-granted lease expiry, RFC 3339. */
  deadline?: string;
  via: 'fast' | 'claim' | 'existing';
  /** Until this time (epoch ms) a 404 means "not listed yet", not "gone" (a sandbox claimed moments ago). */
  settleUntil?: number;
}

const ForkResultSchema = z.looseObject({
  children: z
    .array(
      z.looseObject({
        name: z.string(),
        sandboxID: z.string().optional(),
        nodeName: z.string().optional(),
        address: z.string().optional(),
      }),
    )
    .default([]),
});
const SnapshotSchema = z.looseObject({
  snapshotID: z.string(),
  name: z.string().optional(),
  nodeName: z.string().optional(),
  creationTimestamp: z.string().nullable().optional(),
});
const SnapshotListSchema = z.looseObject({
  items: z.array(SnapshotSchema.extend({ sandboxID: z.string().optional(), pool: z.looseObject({}).optional() })).default([]),
});
const StatsSchema = z.looseObject({
  cpuCount: z.number().optional(),
  memTotalBytes: z.number().optional(),
  memUsedBytes: z.number().optional(),
  memUsedMeasured: z.boolean().optional(),
  paused: z.boolean().optional(),
  measuredAt: z.string().nullable().optional(),
  nodeName: z.string().optional(),
});
const PromoteSchema = z.looseObject({
  template: z.string().optional(),
  net: z.string().optional(),
  size: z.string().optional(),
  nodeName: z.string().optional(),
});
const SandboxObjectSchema = z.looseObject({
  metadata: z.looseObject({ name: z.string(), namespace: z.string().optional(), annotations: z.record(z.string(), z.string()).optional() }),
  status: z.looseObject({ nodeName: z.string().optional(), podIPs: z.array(z.string()).optional() }).optional(),
});

export type ForkChild = z.infer<typeof ForkResultSchema>['children'][number];
export type SnapshotInfo = z.infer<typeof SnapshotSchema>;
export type SnapshotListItem = z.infer<typeof SnapshotListSchema>['items'][number];
export type SandboxStats = z.infer<typeof StatsSchema>;
export type PromoteResult = z.infer<typeof PromoteSchema>;

/** Actions whose repetition changes nothing: retried on an answer given before the server acted. */
const IDEMPOTENT: ReadonlySet<SandboxAction> = new Set(['pause', 'resume', 'stats', 'snapshots']);

/**
 * A handle on one sandbox: its lifecycle verbs are sandbox-apiserver's POST subresources
 * (`sandboxes/{name}/pause` …) and its reads (stats, snapshots) GETs of them, so RBAC on
 * `sandboxes/<verb>` decides who may call them (the view role may read).
 */
export class Sandbox implements SandboxRef {
  readonly name: string;
  readonly namespace: string;
  readonly node: string;
  readonly address: string;
  readonly token: string;
  readonly claimName: string | undefined;
  readonly claimId: string | undefined;
  readonly deadline: string | undefined;
  readonly via: SandboxRef['via'];
  /** Its files: read, write, list, stat, remove, and directories as tar (the `files` subresource). */
  readonly files: SandboxFiles;
  readonly #settleUntil: number;
  readonly #scope: SandboxScope;

  constructor(
    private readonly kc: KubeConfig,
    ref: SandboxRef,
  ) {
    this.name = ref.name;
    this.namespace = ref.namespace;
    this.node = ref.node;
    this.address = ref.address;
    this.token = ref.token;
    this.claimName = ref.claimName;
    this.claimId = ref.claimId;
    this.deadline = ref.deadline;
    this.via = ref.via;
    this.#settleUntil = ref.settleUntil ?? 0;
    this.#scope = { kc, namespace: this.namespace, name: this.name, settling: () => this.#settling() };
    this.files = new SandboxFiles(this.#scope);
  }

  #settling(): boolean {
    return Date.now() < this.#settleUntil;
  }

  /** console.log and util.inspect print what toJSON gives, so a logged handle never shows its token. */
  [inspect.custom](): Omit<SandboxRef, 'token'> {
    return this.toJSON();
  }

  /** Without the token, so printing or logging a handle never shows it. */
  toJSON(): Omit<SandboxRef, 'token'> {
    const { name, namespace, node, address, claimName, claimId, deadline, via } = this;
    return {
      name,
      namespace,
      node,
      address,
      via,
      ...(claimName ? { claimName } : {}),
      ...(claimId ? { claimId } : {}),
      ...(deadline ? { deadline } : {}),
    };
  }

  #act(action: SandboxAction, options: Record<string, unknown> = {}, o: CallOptions = {}): Promise<unknown> {
    return callOnSandbox(this.#scope, action, { idempotent: IDEMPOTENT.has(action) }, o, (signal) =>
      act(this.kc, { namespace: this.namespace, name: this.name, action, options, signal }),
    );
  }

  /**
   * Runs a command to completion in the sandbox and returns its exit code and output (the
   * `exec` subresource, authorized as `create sandboxes/exec`). A non-zero exit is a result, not
   * an error; a command past `timeoutMs` is a DeadlineExceededError, output over the node's cap
   * a TooLargeError.
   */
  exec(argv: readonly string[], o: ExecOptions = {}): Promise<ExecResult> {
    return execIn(this.#scope, argv, o);
  }

  /**
   * Listens on 127.0.0.1 (localPort, default a free one) and relays each connection to `port`
   * in the sandbox, each through its own upgrade of the `portforward` subresource (authorized as
   * `create sandboxes/portforward`). The sandbox is looked up first, so a wrong name fails here
   * rather than on the first connection.
   */
  async forward(port: number, o: ListenOptions & CallOptions = {}): Promise<PortForward> {
    checkPort('the sandbox port', port);
    await callOnSandbox(this.#scope, 'forward to', { idempotent: true }, o, (signal) =>
      call(
        this.kc,
        { method: 'GET', path: sandboxesPath(this.namespace, this.name), signal },
        sandboxTarget('get', this.namespace, this.name),
      ),
    );
    const target: RequestTarget = {
      verb: 'create',
      resource: 'sandboxes/portforward',
      group: SANDBOX_GROUP,
      namespace: this.namespace,
      name: this.name,
    };
    const path = `${sandboxesPath(this.namespace, this.name)}/portforward`;
    return listenForward((signal) => openUpgrade(this.kc, { path, query: { port }, protocol: 'tcp', signal }, target), o);
  }

  async pause(o?: CallOptions): Promise<void> {
    await this.#act('pause', {}, o);
  }

  async resume(o?: CallOptions): Promise<void> {
    await this.#act('resume', {}, o);
  }

  /** Clones the running sandbox `count` times (default 1) on its node; the children are served as `<name>-sb-<n>`. */
  async fork(o: CallOptions & { count?: number; ttlSeconds?: number } = {}): Promise<ForkChild[]> {
    const r = await this.#act(
      'fork',
      { ...(o.count !== undefined ? { count: o.count } : {}), ...(o.ttlSeconds ? { ttlSeconds: o.ttlSeconds } : {}) },
      o,
    );
    return ForkResultSchema.parse(r).children;
  }

  /** Checkpoints the sandbox in place (it keeps running). */
  async snapshot(o: CallOptions & { name?: string } = {}): Promise<SnapshotInfo> {
    return SnapshotSchema.parse(await this.#act('snapshot', o.name ? { name: o.name } : {}, o));
  }

  /** This sandbox's checkpoints, newest first. */
  async snapshots(o?: CallOptions): Promise<SnapshotListItem[]> {
    return SnapshotListSchema.parse(await this.#act('snapshots', {}, o)).items;
  }

  async deleteSnapshot(snapshot: string, o?: CallOptions): Promise<void> {
    await this.#act('deletesnapshot', { snapshot }, o);
  }

  /** A new sandbox `name` in this namespace, branched from one of this sandbox's checkpoints. */
  async restore(o: CallOptions & { snapshot: string; name: string; ttlSeconds?: number }): Promise<Sandbox> {
    const raw = await this.#act(
      'claimsnapshot',
      { snapshot: o.snapshot, name: o.name, ...(o.ttlSeconds ? { ttlSeconds: o.ttlSeconds } : {}) },
      o,
    );
    const s = SandboxObjectSchema.parse(raw);
    const ip = s.status?.podIPs?.[0] ?? '';
    // the token is in this creation answer only (sandbox-apiserver never serves it on reads)
    return new Sandbox(this.kc, {
      name: s.metadata.name,
      namespace: this.namespace,
      node: s.status?.nodeName ?? '',
      address: ip,
      token: s.metadata.annotations?.[ANNOTATIONS.token] ?? '',
      via: 'existing',
    });
  }

  /** Makes this sandbox's state the template new warm VMs of `template` boot from. */
  async promote(o: CallOptions & { template: string }): Promise<PromoteResult> {
    return PromoteSchema.parse(await this.#act('promote', { template: o.template }, o));
  }

  async stats(o?: CallOptions): Promise<SandboxStats> {
    return StatsSchema.parse(await this.#act('stats', {}, o));
  }

  /**
   * Gives the sandbox back: deletes its SandboxClaim (whose finalizer releases the VM), or the
   * Sandbox itself when no claim holds it (fork children, restored sandboxes). Resolves false
   * when neither exists (already released), so a repeated release is harmless but visible.
   */
  async release(o: CallOptions = {}): Promise<boolean> {
    const d = deadlineOf(o);
    for (;;) {
      if (
        this.claimName !== undefined &&
        (await this.#deleteIfFound(
          claimsPath(this.namespace, this.claimName),
          claimTarget('delete', this.namespace, this.claimName),
          d.signal,
        ))
      )
        return true;
      if (await this.#deleteIfFound(sandboxesPath(this.namespace, this.name), sandboxTarget('delete', this.namespace, this.name), d.signal))
        return true;
      // neither is listed yet: right after a fast-path claim that is a record still on its way,
      // and returning now would leave the VM claimed
      if (!this.#settling()) return false;
      await wait(250, d.signal);
    }
  }

  async #deleteIfFound(path: string, target: RequestTarget, signal?: AbortSignal): Promise<boolean> {
    try {
      await call(this.kc, { method: 'DELETE', path, signal }, target);
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }
}

import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { EXTENSIONS_API_VERSION, retry } from '@sandbox-scale/scale-core';
import { z } from 'zod';
import { ClaimObjectSchema, claimPhase, type BoundSandbox, type ClaimObject } from './claim-status';
import { waitForClaim } from './claim-wait';
import { listClaimObjects, listSandboxObjects, SandboxObjectSchema, type ListScope, type SandboxObject } from './listing';
import { deadlineOf, wait, type CallOptions, type Deadline } from './deadline';
import {
  AbortedError,
  ClaimFailedError,
  ClaimOutcomeUnknownError,
  ClaimTimeoutError,
  isAlreadyExists,
  isNotFound,
  type UnavailableError,
} from './errors';
import {
  AssignmentSchema,
  fastPathCa,
  fastPathKubeConfig,
  fastPathToken,
  isRetryableBeforeClaim,
  locateFastPath,
  mayHaveClaimed,
  type FastPathOptions,
} from './fast-path';
import { call, claimsPath, claimTarget, sandboxesPath, sandboxTarget } from './kube-api';
import { contextNamespace, userKubeConfig, type ContextOptions } from './kube-context';
import { Sandbox, type SandboxRef } from './sandbox';

export interface SandboxClientOptions extends ContextOptions {
  /** A KubeConfig to use instead of loading one. */
  kubeConfig?: KubeConfig;
  /** Default namespace; else the context's namespace, else `default`. */
  namespace?: string;
  fastPath?: FastPathOptions;
}

export interface ClaimOptions extends CallOptions {
  /** The SandboxWarmPool to take a warm sandbox from. */
  pool: string;
  namespace?: string;
  /** `fast`: POST /v1/claims, a warm VM in one round trip. `claim` (default): a SandboxClaim, waited on until Ready. */
  via?: 'fast' | 'claim';
  /** The claim's name; default `<pool>-<random>`. */
  name?: string;
  /** Lease of the sandbox on its node (fast path only); 0 or absent: the node's default. */
  ttlSeconds?: number;
  /** Claim path: wait until the claim is Ready (default true); false returns as soon as it is created. */
  wait?: boolean;
  /** Claim path: read the sandbox token from the claim's Secret once Ready (default true); false leaves the handle's token empty. */
  withToken?: boolean;
  /** Claim path: when the claim ends and its sandbox is released (spec.lifecycle.shutdownTime); absent: never. */
  shutdownTime?: Date;
  /** Claim path: labels and annotations of the SandboxClaim. */
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** Default limit of a claim, waiting included; a warm claim takes milliseconds, a cold one can take long. */
const DEFAULT_CLAIM_TIMEOUT_MS = 120_000;
/**
 * How long after a claim a 404 from sandbox-apiserver or the SandboxClaim path means "not
 * listed yet" rather than "gone": sandbox-apiserver serves a sandbox once its node publishes its
 * inventory, which can come after the claim reads Ready, and a fast-path claim's record is
 * written after the answer. A 404 is given before anything was done, so retrying it is safe.
 */
const NEW_SANDBOX_SETTLE_MS = 30_000;

const TokenRequestSchema = z.looseObject({ status: z.looseObject({ token: z.string().min(1) }) });
const SecretSchema = z.looseObject({ data: z.record(z.string(), z.string()).optional() });

function claimName(pool: string): string {
  // a DNS subdomain: the pool name is one already; keep room for the suffix
  return `${pool.slice(0, 240).replace(/[.-]+$/, '')}-${randomBytes(3).toString('hex')}`;
}

/**
 * Entry point of the SDK: claims sandboxes and hands out handles to drive them. One instance
 * per kubeconfig/context; the fast path's URL is found once and reused.
 */
export class SandboxClient {
  readonly kubeConfig: KubeConfig;
  readonly namespace: string;
  readonly #fastPath: FastPathOptions;
  #fastPathUrl: string | undefined;

  constructor(o: SandboxClientOptions = {}) {
    this.kubeConfig = o.kubeConfig ?? userKubeConfig(o);
    this.namespace = o.namespace ?? contextNamespace(this.kubeConfig);
    this.#fastPath = o.fastPath ?? {};
  }

  /** Claims a sandbox from a warm pool and returns a handle with its name, node, address and token. */
  async claim(o: ClaimOptions): Promise<Sandbox> {
    const d = deadlineOf(o, DEFAULT_CLAIM_TIMEOUT_MS);
    const namespace = o.namespace ?? this.namespace;
    const name = o.name ?? claimName(o.pool);
    try {
      return o.via === 'fast' ? await this.#claimFast(namespace, name, o, d) : await this.#claimWithObject(namespace, name, o, d);
    } catch (err) {
      throw this.#ended(err, d, `claim ${namespace}/${name} from pool ${o.pool}`);
    }
  }

  /**
   * A handle on an existing sandbox by its served name, e.g. one claimed earlier or a fork child.
   * A claimed sandbox is served under its claim's name, so `release` deletes the claim of that
   * name first and the Sandbox itself only when no claim holds it.
   */
  sandbox(name: string, namespace = this.namespace): Sandbox {
    return new Sandbox(this.kubeConfig, { name, namespace, node: '', address: '', token: '', claimName: name, via: 'existing' });
  }

  /**
   * A handle on the sandbox a SandboxClaim is bound to, with its token when `withToken` (read from
   * the claim's Secret). A claim not bound yet is a ClaimFailedError, or with `wait` is watched
   * until it is Ready (or fails).
   */
  async fromClaim(name: string, o: CallOptions & { namespace?: string; withToken?: boolean; wait?: boolean } = {}): Promise<Sandbox> {
    const namespace = o.namespace ?? this.namespace;
    const d = deadlineOf(o, o.wait ? DEFAULT_CLAIM_TIMEOUT_MS : undefined);
    const read = (): Promise<ClaimObject> => this.getClaim(name, { namespace, signal: d.signal });
    const phase = o.wait
      ? await waitForClaim(this.kubeConfig, { namespace, name, signal: d.signal, read }).catch((err: unknown) => {
          throw this.#ended(err, d, `wait for claim ${namespace}/${name}`);
        })
      : claimPhase(await read());
    if (phase.state !== 'ready')
      throw new ClaimFailedError(`claim ${namespace}/${name} is not bound yet (${phase.reason}: ${phase.message})`, phase.reason);
    const token = o.withToken ? await this.#tokenOf(namespace, name, phase.sandbox, d.signal) : '';
    return this.#handle(namespace, name, phase.sandbox, token, 'existing');
  }

  async getClaim(name: string, o: CallOptions & { namespace?: string } = {}): Promise<ClaimObject> {
    const namespace = o.namespace ?? this.namespace;
    const d = deadlineOf(o);
    return ClaimObjectSchema.parse(
      await call(
        this.kubeConfig,
        { method: 'GET', path: claimsPath(namespace, name), signal: d.signal },
        claimTarget('get', namespace, name),
      ),
    );
  }

  /** SandboxClaims of a namespace, or of every namespace with `allNamespaces` (needs list on them cluster-wide). */
  async listClaims(o: CallOptions & { namespace?: string; allNamespaces?: boolean; labelSelector?: string } = {}): Promise<ClaimObject[]> {
    const d = deadlineOf(o);
    return listClaimObjects(this.kubeConfig, { ...this.#scope(o), signal: d.signal });
  }

  /**
   * Sandboxes of a namespace (or every namespace) as the API serves them: those a claim holds and
   * those made without one (kubectl create, a fork, a restore). Read in pages.
   */
  async listSandboxes(
    o: CallOptions & { namespace?: string; allNamespaces?: boolean; labelSelector?: string } = {},
  ): Promise<SandboxObject[]> {
    const d = deadlineOf(o);
    return listSandboxObjects(this.kubeConfig, { ...this.#scope(o), signal: d.signal });
  }

  /** One Sandbox as the API serves it; a NotFoundError when none is served under the name. */
  async getSandbox(name: string, o: CallOptions & { namespace?: string } = {}): Promise<SandboxObject> {
    const namespace = o.namespace ?? this.namespace;
    const d = deadlineOf(o);
    return SandboxObjectSchema.parse(
      await call(
        this.kubeConfig,
        { method: 'GET', path: sandboxesPath(namespace, name), signal: d.signal },
        sandboxTarget('get', namespace, name),
      ),
    );
  }

  #scope(o: { namespace?: string; allNamespaces?: boolean; labelSelector?: string }): ListScope {
    return {
      namespace: o.namespace ?? this.namespace,
      ...(o.allNamespaces ? { allNamespaces: true } : {}),
      ...(o.labelSelector ? { labelSelector: o.labelSelector } : {}),
    };
  }

  /**
   * Moves when a claim ends (spec.lifecycle.shutdownTime): earlier or later, its sandbox is
   * released then. A merge patch, so only this field changes.
   */
  async setShutdownTime(claim: string, at: Date, o: CallOptions & { namespace?: string } = {}): Promise<ClaimObject> {
    const namespace = o.namespace ?? this.namespace;
    const d = deadlineOf(o);
    return ClaimObjectSchema.parse(
      await call(
        this.kubeConfig,
        {
          method: 'PATCH',
          path: claimsPath(namespace, claim),
          body: { spec: { lifecycle: { shutdownTime: rfc3339(at) } } },
          contentType: 'application/merge-patch+json',
          signal: d.signal,
        },
        claimTarget('patch', namespace, claim),
      ),
    );
  }

  /**
   * A token of a ServiceAccount of the namespace for kube-apiserver's own audience (TokenRequest,
   * as `kubectl create token`): the API key e2b's SDKs send. Needs create on serviceaccounts/token.
   */
  async serviceAccountToken(
    serviceAccount: string,
    o: CallOptions & { namespace?: string; expirationSeconds?: number } = {},
  ): Promise<string> {
    const namespace = o.namespace ?? this.namespace;
    const d = deadlineOf(o);
    const body = {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { ...(o.expirationSeconds !== undefined ? { expirationSeconds: o.expirationSeconds } : {}) },
    };
    const raw = await call(
      this.kubeConfig,
      {
        method: 'POST',
        path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(serviceAccount)}/token`,
        body,
        signal: d.signal,
      },
      { verb: 'create', resource: 'serviceaccounts/token', namespace, name: serviceAccount },
    );
    return TokenRequestSchema.parse(raw).status.token;
  }

  /** The sandbox token a claim-controller stored in the claim's Secret. */
  async token(claim: string, o: CallOptions & { namespace?: string } = {}): Promise<string> {
    const namespace = o.namespace ?? this.namespace;
    const d = deadlineOf(o);
    const c = await this.getClaim(claim, { namespace, signal: d.signal });
    const phase = claimPhase(c);
    return this.#tokenOf(namespace, claim, phase.state === 'ready' ? phase.sandbox : undefined, d.signal);
  }

  async #claimFast(namespace: string, name: string, o: ClaimOptions, d: Deadline): Promise<Sandbox> {
    const url = (this.#fastPathUrl ??= await locateFastPath(this.kubeConfig, this.#fastPath, d.signal));
    const token = await fastPathToken(this.kubeConfig, this.#fastPath, d.signal);
    const kc = fastPathKubeConfig(url, token, fastPathCa(this.#fastPath));
    const body = { namespace, name, warmPool: o.pool, ...(o.ttlSeconds ? { ttlSeconds: o.ttlSeconds } : {}) };
    let refused: unknown;
    let inFlight = false;
    let raw: unknown;
    try {
      raw = await retry(
        async (_attempt, signal) => {
          try {
            inFlight = true;
            return await call(
              kc,
              { method: 'POST', path: '/v1/claims', body, signal },
              { verb: 'create', resource: 'sandboxclaims', namespace, name },
            );
          } catch (err) {
            if (!isRetryableBeforeClaim(err)) throw err;
            inFlight = false;
            refused = err;
            // wait what the server asked before the next try; the backoff after it only adds jitter
            const after = (err as UnavailableError).retryAfterSeconds;
            if (after !== undefined) await wait(after * 1000, signal);
            throw err;
          }
        },
        { attempts: Infinity, baseMs: 50, maxMs: 1_000, jitter: 1, signal: d.signal, shouldRetry: isRetryableBeforeClaim, sleep: wait },
      );
    } catch (err) {
      if (inFlight && mayHaveClaimed(err, d.signal?.aborted === true)) {
        throw new ClaimOutcomeUnknownError(
          `the fast path may have handed over sandbox ${namespace}/${name} before its answer was lost (${(err as Error).message}); it is then recorded as SandboxClaim ${name}: release it with \`kubectl sandbox release ${name} -n ${namespace}\``,
          { namespace, name, cause: err },
        );
      }
      // a deadline that ended the retries reports what the server kept answering
      throw d.signal?.aborted && refused !== undefined ? refused : err;
    }
    const a = AssignmentSchema.parse(raw);
    const sandbox: BoundSandbox = {
      name: a.name,
      claimId: a.claimId,
      node: a.node,
      address: a.address,
      tokenSecretName: undefined,
      deadline: a.deadline,
    };
    return this.#handle(a.namespace, a.name, sandbox, a.token, 'fast');
  }

  async #claimWithObject(namespace: string, name: string, o: ClaimOptions, d: Deadline): Promise<Sandbox> {
    const body = {
      apiVersion: EXTENSIONS_API_VERSION,
      kind: 'SandboxClaim',
      metadata: {
        name,
        namespace,
        ...(o.labels !== undefined ? { labels: o.labels } : {}),
        ...(o.annotations !== undefined ? { annotations: o.annotations } : {}),
      },
      spec: {
        warmPoolRef: { name: o.pool },
        ...(o.shutdownTime !== undefined ? { lifecycle: { shutdownTime: rfc3339(o.shutdownTime) } } : {}),
      },
    };
    await retry(
      async (attempt, signal) => {
        try {
          await call(
            this.kubeConfig,
            { method: 'POST', path: claimsPath(namespace), body, signal },
            claimTarget('create', namespace, name),
          );
        } catch (err) {
          // a retried create that finds the name taken found the first try's object: the name is ours (random suffix)
          if (attempt > 0 && o.name === undefined && isAlreadyExists(err)) return;
          throw err;
        }
      },
      { attempts: 5, baseMs: 200, maxMs: 2_000, jitter: 0.5, signal: d.signal, shouldRetry: isRetryableBeforeClaim, sleep: wait },
    );
    if (o.wait === false)
      return this.#handle(
        namespace,
        name,
        { name, claimId: undefined, node: '', address: '', tokenSecretName: undefined, deadline: undefined },
        '',
        'claim',
      );
    try {
      const phase = await waitForClaim(this.kubeConfig, {
        namespace,
        name,
        signal: d.signal,
        read: () => this.getClaim(name, { namespace, signal: d.signal }),
      });
      if (phase.state === 'failed')
        throw new ClaimFailedError(`claim ${namespace}/${name} failed: ${phase.reason}: ${phase.message}`, phase.reason);
      const token = o.withToken === false ? '' : await this.#freshTokenOf(namespace, name, phase.sandbox, d.signal);
      return this.#handle(namespace, name, phase.sandbox, token, 'claim');
    } catch (err) {
      // the claim was ours and nobody will get a handle on it: release it rather than leak a VM
      if (d.signal?.aborted || err instanceof ClaimFailedError) await this.#releaseQuietly(namespace, name);
      throw err;
    }
  }

  /**
   * The token of a claim seen Ready a moment ago: claim-controller writes the claim's status and
   * its token Secret side by side, and the watch can bring Ready before the Secret is readable,
   * so while the status names the Secret a 404 is retried for a few seconds (about 7.5 s over 12
   * reads) before it is an answer.
   */
  #freshTokenOf(namespace: string, claim: string, sandbox: BoundSandbox, signal?: AbortSignal): Promise<string> {
    if (sandbox.tokenSecretName === undefined) return this.#tokenOf(namespace, claim, sandbox, signal);
    return retry((_attempt, s) => this.#tokenOf(namespace, claim, sandbox, s), {
      attempts: 12,
      baseMs: 50,
      maxMs: 1_000,
      jitter: 0.2,
      ...(signal ? { signal } : {}),
      shouldRetry: isNotFound,
      sleep: wait,
    });
  }

  async #tokenOf(namespace: string, claim: string, sandbox: BoundSandbox | undefined, signal?: AbortSignal): Promise<string> {
    const secret = sandbox?.tokenSecretName ?? `${claim}-sandbox-token`;
    const raw = await call(
      this.kubeConfig,
      { method: 'GET', path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(secret)}`, signal },
      { verb: 'get', resource: 'secrets', namespace, name: secret },
    );
    const b64 = SecretSchema.parse(raw).data?.token;
    return b64 ? Buffer.from(b64, 'base64').toString('utf8') : '';
  }

  async #releaseQuietly(namespace: string, name: string): Promise<void> {
    try {
      await call(
        this.kubeConfig,
        { method: 'DELETE', path: claimsPath(namespace, name), signal: AbortSignal.timeout(10_000) },
        claimTarget('delete', namespace, name),
      );
    } catch {
      // best effort: the claim stays visible to the caller, who can delete it
    }
  }

  /** A sandbox claimed just now (`fast`, `claim`) may answer 404 for a while: "not listed yet". */
  #handle(namespace: string, claim: string, s: BoundSandbox, token: string, via: SandboxRef['via']): Sandbox {
    const fresh = via !== 'existing';
    return new Sandbox(this.kubeConfig, {
      name: s.name,
      namespace,
      node: s.node,
      address: s.address,
      token,
      claimName: claim,
      ...(s.claimId ? { claimId: s.claimId } : {}),
      ...(s.deadline ? { deadline: s.deadline } : {}),
      via,
      ...(fresh ? { settleUntil: Date.now() + NEW_SANDBOX_SETTLE_MS } : {}),
    });
  }

  #ended(err: unknown, d: Deadline, what: string): unknown {
    if (d.timedOut())
      return new ClaimTimeoutError(
        `${what}: timed out${err instanceof Error && !(err instanceof DOMException) ? ` (last: ${err.message})` : ''}`,
        { cause: err },
      );
    // the claim was cancelled, whichever of its calls was under way: the error names the claim
    if (d.signal?.aborted) return new AbortedError(`${what}: cancelled`, { cause: err });
    return err;
  }
}

/** A time as the API's RFC 3339 at whole seconds (metav1.Time). */
function rfc3339(t: Date): string {
  return `${t.toISOString().slice(0, 19)}Z`;
}

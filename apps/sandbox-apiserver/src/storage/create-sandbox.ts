import { randomUUID } from 'node:crypto';
import {
  ANNOTATIONS,
  AlreadyExistsError,
  BadRequestError,
  CapacityLedger,
  CONDITION_REASONS,
  CONDITION_STATUS,
  CONDITION_TYPES,
  InvalidError,
  isDns1123Subdomain,
  NoWarmCapacityError,
  parseObject,
  poolKeyForSandbox,
  SANDBOX_API_VERSION,
  SANDBOX_GROUP,
  SandboxSchema,
  SandboxSpecSchema,
  addressIPs,
  formatOwnerRef,
  formatRfc3339Seconds,
  ignoredPodTemplateFields,
  ignoredPodTemplateMessage,
  OWNER_KINDS,
  refusedSandboxFields,
  retry,
  sandboxUid,
  StatusError,
  synthesizeSandbox,
  type PoolKey,
  type Rng,
  type Sandbox,
} from '@sandbox-scale/scale-core';
import type { Logger } from '@sandbox-scale/kube-runtime';
import { isAbortError, isNodeAtCapacity, isTransportError, isUnusableReply, type SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { deriveTtlSeconds } from './ttl';
import { SANDBOX_RESOURCE, type SandboxStorage } from './sandbox-storage';

const NAME_CHARS = 'bcdfghjklmnpqrstvwxz2456789';

function generateName(base: string): string {
  let suffix = '';
  for (let i = 0; i < 5; i++) suffix += NAME_CHARS[Math.floor(Math.random() * NAME_CHARS.length)];
  return base.slice(0, 58) + suffix;
}

const invalid = (name: string, field: string, reason: string, message: string): InvalidError =>
  new InvalidError({ group: SANDBOX_GROUP, kind: 'Sandbox' }, name, [{ reason, field, message }]);

/** Checks kind, namespace and name, then the schema (422 with every field cause). */
export function admitSandbox(body: unknown, namespace: string): Sandbox {
  if (typeof body !== 'object' || body === null) throw new BadRequestError('the body of the request is not a Sandbox object');
  const raw = body as { kind?: unknown; apiVersion?: unknown; metadata?: { namespace?: unknown; name?: unknown; generateName?: unknown } };
  if (raw.kind !== 'Sandbox' || raw.apiVersion !== SANDBOX_API_VERSION)
    throw new BadRequestError(
      `expected kind Sandbox, apiVersion ${SANDBOX_API_VERSION}; got kind ${String(raw.kind)}, apiVersion ${String(raw.apiVersion)}`,
    );
  const meta = raw.metadata ?? {};
  if (meta.namespace !== undefined && meta.namespace !== '' && meta.namespace !== namespace)
    throw new BadRequestError('the namespace of the provided object does not match the namespace sent on the request');
  const name =
    typeof meta.name === 'string' && meta.name !== ''
      ? meta.name
      : typeof meta.generateName === 'string' && meta.generateName !== ''
        ? generateName(meta.generateName)
        : '';
  if (name === '') throw invalid('', 'metadata.name', 'FieldValueRequired', 'Required value: name or generateName is required');
  if (!isDns1123Subdomain(name))
    throw invalid(
      name,
      'metadata.name',
      'FieldValueInvalid',
      `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`,
    );
  const s = parseObject(SandboxSchema, { ...(body as object), metadata: { ...meta, name, namespace } });
  // a value asking for what a microVM does not do is refused before any VM is spent, never dropped
  const refused = refusedSandboxFields(body);
  if (refused.length > 0)
    throw new InvalidError(
      { group: SANDBOX_GROUP, kind: 'Sandbox' },
      name,
      refused.map((r) => ({ reason: 'FieldValueForbidden', field: r.field, message: `Forbidden: ${r.message}` })),
    );
  delete s.metadata.generateName;
  return s;
}

/**
 * The `Warning` header values (as kube-apiserver words them) of a create whose pod template
 * has fields a microVM does not use: the Sandbox is created, and the user sees what was not applied.
 */
export function createWarnings(body: unknown): string[] {
  const spec = SandboxSpecSchema.safeParse(typeof body === 'object' && body !== null ? (body as { spec?: unknown }).spec : undefined);
  if (!spec.success) return [];
  const fields = ignoredPodTemplateFields(spec.data.podTemplate, { at: 'spec.podTemplate', netAnnotationCounts: false });
  return fields.length === 0 ? [] : [`299 - ${JSON.stringify(ignoredPodTemplateMessage(fields))}`];
}

export interface CreateOptions {
  readonly dryRun: boolean;
  readonly now?: Date;
}

/** A claim error after which the node may or may not have delivered. */
function isUnknownOutcome(err: unknown): boolean {
  return isUnusableReply(err) || isAbortError(err) || isTransportError(err);
}

/**
 * Create: validate, derive the TTL (400 before
 * any VM is spent), refuse a taken name (409), then claim on a node chosen by power of two
 * choices over local capacity counts; 503 when no node has warm capacity. The token appears
 * only in this response.
 */
export class SandboxCreator {
  constructor(
    private readonly storage: SandboxStorage,
    private readonly ledger: CapacityLedger,
    private readonly rng: Rng,
    private readonly log: Logger,
  ) {}

  async create(namespace: string, body: unknown, opts: CreateOptions): Promise<Sandbox> {
    const s = admitSandbox(body, namespace);
    const name = s.metadata.name ?? '';
    const now = opts.now ?? new Date();
    const ttlSeconds = deriveTtlSeconds(s, now);
    const pool = poolKeyForSandbox(s);
    if (this.storage.names.isTaken(namespace, name)) {
      throw new AlreadyExistsError(SANDBOX_RESOURCE, name);
    }
    if (opts.dryRun) return { ...s, metadata: { ...s.metadata, uid: randomUUID(), creationTimestamp: formatRfc3339Seconds(now) } };
    this.storage.router.assertConfigured();
    const release = this.storage.names.hold(namespace, name);
    try {
      return await this.#claim(s, namespace, name, pool, ttlSeconds, now);
    } finally {
      release();
    }
  }

  async #claim(s: Sandbox, namespace: string, name: string, pool: PoolKey, ttlSeconds: number, now: Date): Promise<Sandbox> {
    // a fresh uid per create: a Sandbox deleted and created again under the same name is
    // another owner, and no SandboxClaim of that name ever matches a Sandbox reference
    const lease = this.storage.leases.forRequested(ttlSeconds);
    const claimRef = formatOwnerRef(
      {
        kind: OWNER_KINDS.sandbox,
        uid: randomUUID(),
        namespace,
        name,
        ...(lease.renewed ? { renewed: true } : {}),
      },
      this.storage.refKey,
    );
    const failed = new Set<string>();
    let lastFailure: unknown;
    for (;;) {
      // the cache's own frozen list while no node has failed this create: the ledger then chooses without a walk
      const all = this.storage.cache.inventories();
      const inventories = failed.size === 0 ? all : all.filter((i) => !failed.has(i.metadata.name ?? i.node));
      const chosen = this.ledger.choose(inventories, pool, this.rng);
      if (chosen === undefined) throw lastFailure ?? new NoWarmCapacityError(pool);
      const client = this.storage.router.clientAt(chosen.addr);
      try {
        const res = await client.claim(
          { template: pool.template, net: pool.net, size: pool.size, ttlSeconds: lease.ttlSeconds, claimRef },
          { signal: AbortSignal.timeout(10_000) },
        );
        return this.#created(
          s,
          { namespace, name, node: chosen.node, id: res.id, token: res.token, addr: res.ownerAddr, deadline: res.deadline, claimRef },
          now,
        );
      } catch (err) {
        if (isNodeAtCapacity(err)) {
          this.ledger.exhaust(chosen.node, pool);
          this.log.debug(
            { node: chosen.node, pool: `${pool.template}/${pool.net}/${pool.size}` },
            'node raced to zero warm capacity, re-picking',
          );
          continue;
        }
        const d = isUnknownOutcome(err) ? await this.#deliveredDespite(client, chosen.node, claimRef, err) : undefined;
        if (d !== undefined)
          return this.#created(
            s,
            { namespace, name, node: chosen.node, id: d.id, token: d.token, addr: chosen.addr, deadline: d.deadline, claimRef },
            now,
          );
        this.ledger.putBack(chosen.node, pool);
        if (!isUnknownOutcome(err)) throw err;
        // the node says it handed nothing over under this reference: another node may
        failed.add(chosen.node);
        lastFailure = err;
        this.log.warn({ err, node: chosen.node, claimRef }, 'claim failed and the node delivered nothing; trying another node');
      }
    }
  }

  /**
   * A claim that timed out, failed in transit, or got a 5xx or malformed reply may still have
   * handed the VM over. Ask the node for deliveries under this exact claim_ref (as the claim
   * gateway does): one is served as this create's result; any other is released. A node that
   * cannot be asked leaves the outcome unknown: answered 503, and whatever it delivered is
   * listed under this name once the node publishes (never an unowned VM).
   */
  async #deliveredDespite(
    client: SandboxdClient,
    node: string,
    claimRef: string,
    cause: unknown,
  ): Promise<{ id: string; token: string; deadline: Date | null } | undefined> {
    try {
      const rows = await retry((_attempt) => client.sandboxes(claimRef, { signal: AbortSignal.timeout(5_000) }), {
        attempts: 3,
        baseMs: 200,
        maxMs: 1_000,
      });
      const [first, ...extra] = rows.filter((r) => r.claimRef === claimRef);
      for (const r of extra) {
        await client
          .release(r.id, { signal: AbortSignal.timeout(5_000) })
          .catch((err: unknown) => this.log.warn({ err, node, sandboxId: r.id }, 'could not release a second delivery of one create'));
      }
      if (first === undefined) return undefined;
      const detail = await client.sandbox(first.id, { signal: AbortSignal.timeout(5_000) });
      this.log.warn({ node, sandboxId: first.id, claimRef }, 'adopted a delivery whose claim reply was lost');
      return { id: first.id, token: detail.token ?? '', deadline: first.deadline };
    } catch (err) {
      this.log.error({ err, cause, node, claimRef }, 'claim outcome unknown: the node could not be asked whether it delivered');
      throw new StatusError(
        'ServiceUnavailable',
        `node ${node} did not confirm the claim and could not be asked whether it delivered; if it did, the sandbox is listed under this name once the node publishes`,
        { retryAfterSeconds: 5 },
        { cause: err },
      );
    }
  }

  #created(
    s: Sandbox,
    c: { namespace: string; name: string; node: string; id: string; token: string; addr: string; deadline: Date | null; claimRef: string },
    now: Date,
  ): Sandbox {
    const created = formatRfc3339Seconds(now);
    const deadline = c.deadline !== null && c.deadline.getTime() > 0 ? formatRfc3339Seconds(c.deadline) : '';
    const entry = {
      name: `${c.namespace}/${c.name}`,
      id: c.id,
      phase: 'Running',
      claimRef: c.claimRef,
      ...(c.addr ? { addr: c.addr } : {}),
      ...(deadline ? { deadline } : {}),
      claimedAt: created,
    };
    this.storage.index.put({ namespace: c.namespace, name: c.name, node: c.node, claimId: c.id });
    const row = this.storage.cache.addCreated(
      c.node,
      entry,
      synthesizeSandbox(c.node, entry, { resourceVersion: '0', fallbackCreationTimestamp: created }),
    );
    const podIPs = addressIPs(c.addr);
    const annotations: Record<string, string> = { ...(s.metadata.annotations ?? {}), [ANNOTATIONS.claimId]: c.id };
    if (c.addr) annotations[ANNOTATIONS.address] = c.addr;
    if (c.token) annotations[ANNOTATIONS.token] = c.token;
    if (deadline) annotations[ANNOTATIONS.deadline] = deadline;
    const ready = {
      type: CONDITION_TYPES.ready,
      status: CONDITION_STATUS.true,
      reason: CONDITION_REASONS.dependenciesReady,
      message: `warm sandbox ${c.id} delivered by node ${c.node}`,
      lastTransitionTime: created,
    };
    return {
      ...s,
      metadata: {
        ...s.metadata,
        namespace: c.namespace,
        name: c.name,
        uid: sandboxUid(c.node, c.id),
        creationTimestamp: created,
        resourceVersion: String(row.rev),
        generation: 1,
        annotations,
      },
      status: { nodeName: c.node, ...(podIPs ? { podIPs: [...podIPs] } : {}), conditions: [ready] },
    };
  }
}

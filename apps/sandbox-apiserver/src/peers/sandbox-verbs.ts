import { ANNOTATIONS, type Sandbox, type ServedSandbox } from '@sandbox-scale/scale-core';
import { parseListQuery } from '../http/list-query';
import type { ListQuery } from '../resource/list-query';
import type { ObjectList } from '../storage/rest';
import type { SandboxesREST } from '../storage/sandboxes-rest';
import { deleteSandbox, type DeleteRequest } from '../storage/delete-sandbox';
import { applyNotice, type OverlayShare } from './overlay-share';
import type { PeerCall } from './peer-protocol';

/** The verbs on one named sandbox (and create), and the pages of a list, that must agree across replicas. */
export interface SandboxVerbs {
  /** One page; a page of a list another replica began is that replica's to serve. */
  list(q: ListQuery): Promise<ObjectList>;
  create(namespace: string, body: unknown, opts: { dryRun: boolean }): Promise<Sandbox>;
  get(namespace: string, name: string): Promise<ServedSandbox>;
  delete(namespace: string, name: string, req: DeleteRequest): Promise<ServedSandbox>;
  act(namespace: string, name: string, action: string, body: unknown, dryRun: boolean): Promise<Record<string, unknown> | ServedSandbox>;
}

/** The verbs on this replica's own storage, asking no one. */
export class LocalVerbs implements SandboxVerbs {
  /** Tells the other replicas what this one creates and releases; absent while it acts alone. */
  share: OverlayShare | undefined;

  constructor(readonly storage: SandboxesREST) {}

  async list(q: ListQuery): Promise<ObjectList> {
    return this.storage.reads.list(q);
  }

  async create(namespace: string, body: unknown, opts: { dryRun: boolean }): Promise<Sandbox> {
    const created = await this.storage.creator.create(namespace, body, opts);
    if (!opts.dryRun) await this.share?.created(namespace, created.metadata.name ?? '');
    return created;
  }

  get(namespace: string, name: string): Promise<ServedSandbox> {
    return this.storage.reads.get(namespace, name);
  }

  async delete(namespace: string, name: string, req: DeleteRequest): Promise<ServedSandbox> {
    const deleted = await deleteSandbox(this.storage.reads, namespace, name, req);
    if (!deletesNothing(req)) await this.share?.released(namespace, name, deleted.metadata.annotations?.[ANNOTATIONS.claimId] ?? '');
    return deleted;
  }

  async act(
    namespace: string,
    name: string,
    action: string,
    body: unknown,
    dryRun: boolean,
  ): Promise<Record<string, unknown> | ServedSandbox> {
    const out = await this.storage.lifecycle.act(namespace, name, action, body, dryRun);
    if (!dryRun && this.share !== undefined) for (const made of createdBy(action, out)) await this.share.created(namespace, made);
    return out;
  }

  /** Runs a call a peer handed over. */
  async run(call: PeerCall): Promise<Record<string, unknown>> {
    switch (call.op) {
      case 'create':
        return (await this.create(call.namespace, call.body, { dryRun: call.dryRun })) as unknown as Record<string, unknown>;
      case 'get':
        return (await this.get(call.namespace, call.name)) as unknown as Record<string, unknown>;
      case 'delete':
        return (await this.delete(call.namespace, call.name, { dryRun: call.dryRun, body: call.body })) as unknown as Record<
          string,
          unknown
        >;
      case 'listed':
      case 'released':
        applyNotice(this.storage.reads, call);
        return {};
      case 'list': {
        // parsed as the request was on the replica that forwarded it; a token not of this
        // replica's is 410 here, never handed on
        const params = new URLSearchParams({
          labelSelector: call.labelSelector,
          fieldSelector: call.fieldSelector,
          limit: String(call.limit),
          continue: call.continue,
        });
        return (await this.list(parseListQuery(call.namespace, params, this.storage.selectableFields))) as unknown as Record<
          string,
          unknown
        >;
      }
      default:
        return (await this.act(call.namespace, call.name, call.action, call.body, call.dryRun)) as Record<string, unknown>;
    }
  }
}

/** The sandboxes a lifecycle verb created: a fork's children, a snapshot claim's new sandbox. */
function createdBy(action: string, out: Record<string, unknown> | ServedSandbox): string[] {
  if (action === 'fork') {
    const children = (out as { children?: unknown }).children;
    return Array.isArray(children)
      ? children.map((c: { name?: unknown }) => (typeof c.name === 'string' ? c.name : '')).filter((n) => n !== '')
      : [];
  }
  if (action === 'claimsnapshot') {
    const name = (out as { metadata?: { name?: unknown } }).metadata?.name;
    return typeof name === 'string' ? [name] : [];
  }
  return [];
}

/** A dry run (query or DeleteOptions body, which deleteSandbox has validated) answers the object but releases nothing. */
function deletesNothing(req: DeleteRequest): boolean {
  if (req.dryRun) return true;
  const d = typeof req.body === 'object' && req.body !== null ? (req.body as { dryRun?: unknown }).dryRun : undefined;
  return Array.isArray(d) && d.length > 0;
}

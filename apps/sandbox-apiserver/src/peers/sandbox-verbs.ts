import type { Sandbox, ServedSandbox } from '@sandbox-scale/scale-core';
import type { SandboxesREST as ResourceStorage } from '../storage/sandboxes-rest';
import { deleteSandbox, type DeleteRequest } from '../storage/delete-sandbox';
import type { PeerCall } from './peer-protocol';

/** The verbs on one named sandbox (and create) that must agree across replicas. */
export interface SandboxVerbs {
  create(namespace: string, body: unknown, opts: { dryRun: boolean }): Promise<Sandbox>;
  get(namespace: string, name: string): Promise<ServedSandbox>;
  delete(namespace: string, name: string, req: DeleteRequest): Promise<ServedSandbox>;
  act(namespace: string, name: string, action: string, body: unknown, dryRun: boolean): Promise<Record<string, unknown> | ServedSandbox>;
}

/** The verbs on this replica's own storage, asking no one. */
export class LocalVerbs implements SandboxVerbs {
  constructor(readonly storage: ResourceStorage) {}

  create(namespace: string, body: unknown, opts: { dryRun: boolean }): Promise<Sandbox> {
    return this.storage.creator.create(namespace, body, opts);
  }

  get(namespace: string, name: string): Promise<ServedSandbox> {
    return this.storage.reads.get(namespace, name);
  }

  delete(namespace: string, name: string, req: DeleteRequest): Promise<ServedSandbox> {
    return deleteSandbox(this.storage.reads, namespace, name, req);
  }

  act(namespace: string, name: string, action: string, body: unknown, dryRun: boolean): Promise<Record<string, unknown> | ServedSandbox> {
    return this.storage.lifecycle.act(namespace, name, action, body, dryRun);
  }

  /** Runs a call a peer handed over. */
  async run(call: PeerCall): Promise<Record<string, unknown>> {
    switch (call.op) {
      case 'create':
        return (await this.create(call.namespace, call.body, { dryRun: call.dryRun })) as unknown as Record<string, unknown>;
      case 'get':
        return (await this.get(call.namespace, call.name)) as unknown as Record<string, unknown>;
      case 'delete':
        return (await this.delete(call.namespace, call.name, { dryRun: call.dryRun, body: call.body })) as unknown as Record<string, unknown>;
      default:
        return (await this.act(call.namespace, call.name, call.action, call.body, call.dryRun)) as Record<string, unknown>;
    }
  }
}

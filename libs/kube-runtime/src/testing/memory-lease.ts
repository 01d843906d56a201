import { ApiException } from '@kubernetes/client-node';
import type { Lease } from '../leader/lease';
import type { LeaseClient } from '../leader/lease-client';

/** An API server's worth of Lease semantics: resourceVersion checks on create and replace. */
export class MemoryLease {
  lease: Lease | undefined;
  rv = 0;
  failing = false;
  writes = 0;

  clientFor(): LeaseClient {
    const status = (code: number, reason: string): ApiException<string> =>
      new ApiException(code, reason, JSON.stringify({ kind: 'Status', code, reason }), {});
    return {
      get: async () => {
        if (this.failing) throw new Error('apiserver unreachable');
        return this.lease && structuredClone(this.lease);
      },
      create: async (l) => {
        if (this.failing) throw new Error('apiserver unreachable');
        if (this.lease) throw status(409, 'AlreadyExists');
        return this.store(l);
      },
      replace: async (l) => {
        if (this.failing) throw new Error('apiserver unreachable');
        if (!this.lease || l.metadata.resourceVersion !== this.lease.metadata.resourceVersion) throw status(409, 'Conflict');
        return this.store(l);
      },
    };
  }

  private store(l: Lease): Lease {
    this.writes++;
    this.lease = { ...structuredClone(l), metadata: { ...l.metadata, resourceVersion: String(++this.rv) } };
    return structuredClone(this.lease);
  }
}

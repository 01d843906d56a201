import type { KubeConfig } from '@kubernetes/client-node';
import { isNotFound } from '../client/api-errors';
import { LeaseResource } from '../client/resource';
import { ResourceClient } from '../client/resource-client';
import { type Lease, LeaseSchema } from './lease';

/** The three calls election makes on its one Lease; a seam for tests. */
export interface LeaseClient {
  /** undefined when the Lease does not exist. */
  get(signal?: AbortSignal): Promise<Lease | undefined>;
  /** Fails with AlreadyExists when another candidate created it first. */
  create(lease: Lease, signal?: AbortSignal): Promise<Lease>;
  /** Fails with Conflict when lease.metadata.resourceVersion is stale. */
  replace(lease: Lease, signal?: AbortSignal): Promise<Lease>;
}

export class KubeLeaseClient implements LeaseClient {
  private readonly rc: ResourceClient;

  constructor(
    kc: KubeConfig,
    private readonly namespace: string,
    private readonly name: string,
  ) {
    this.rc = new ResourceClient(kc, LeaseResource);
  }

  async get(signal?: AbortSignal): Promise<Lease | undefined> {
    try {
      return LeaseSchema.parse(await this.rc.get(this.namespace, this.name, signal));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async create(lease: Lease, signal?: AbortSignal): Promise<Lease> {
    return LeaseSchema.parse(await this.rc.create(this.namespace, lease, { signal }));
  }

  async replace(lease: Lease, signal?: AbortSignal): Promise<Lease> {
    return LeaseSchema.parse(await this.rc.replace(this.namespace, this.name, lease, { signal }));
  }
}

import type { KubeConfig } from '@kubernetes/client-node';
import { parseObject } from '@sandbox-scale/scale-core';
import type { KubeResource } from '../client/resource';
import { createInformer, type Informer } from '../informer/informer';
import type { Logger } from '../log/logger';
import { z } from 'zod';
import { ownerOf } from './rendezvous';

export const ENDPOINT_SLICE_RESOURCE: KubeResource = {
  group: 'discovery.k8s.io',
  version: 'v1',
  plural: 'endpointslices',
  kind: 'EndpointSlice',
  namespaced: true,
};

/** The fields of an EndpointSlice peers are read from; the rest is ignored. */
export const EndpointSliceSchema = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: z.looseObject({ name: z.string().optional(), namespace: z.string().optional(), resourceVersion: z.string().optional() }),
  addressType: z.string().optional(),
  endpoints: z
    .array(z.looseObject({ addresses: z.array(z.string()), conditions: z.looseObject({ ready: z.boolean().nullish() }).nullish() }))
    .nullish(),
  ports: z.array(z.looseObject({ name: z.string().nullish(), port: z.number().int().nullish() })).nullish(),
});
export type EndpointSlice = z.infer<typeof EndpointSliceSchema>;

/** `host:port`, with brackets around an IPv6 host, as a URL authority spells it. */
export function peerId(address: string, port: number): string {
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}

/**
 * The ready peers one slice lists: each ready address on the slice's `https` port (or its only
 * port). A slice without a port lists no peer: nothing could be dialled.
 */
export function peersOfSlice(slice: EndpointSlice, portName = 'https'): string[] {
  const ports = slice.ports ?? [];
  const port = (ports.find((p) => p.name === portName) ?? (ports.length === 1 ? ports[0] : undefined))?.port;
  if (port === undefined || port === null) return [];
  const out: string[] = [];
  // a nil ready condition means ready (discovery.k8s.io/v1 EndpointConditions)
  for (const ep of slice.endpoints ?? []) if (ep.conditions?.ready !== false) for (const a of ep.addresses) out.push(peerId(a, port));
  return out;
}

export interface Membership {
  /** This replica's own peer id (`<advertise address>:<port>`); '' when it has none. */
  readonly self: string;
  /** The ready peers, sorted; never empty: with nothing listed, this replica alone. */
  readonly peers: readonly string[];
  /** When the peer set last changed (ms since the epoch); 0 when it never has. */
  readonly changedAt: number;
}

/**
 * Who owns a key (a `namespace/name`, or a namespace). The peers are the ready endpoints of the
 * replicas' own Service, as EndpointSlices list them; every replica reads the same slices, so
 * every replica picks the same owner (rendezvous hashing). A replica that is not (yet) listed owns nothing
 * and hands every name to a listed one; with no slice at all (one replica, a local run without
 * a Service) it owns everything.
 */
export class PeerSet {
  #peers: readonly string[] = [];
  #changedAt = 0;

  constructor(
    readonly self: string,
    private readonly now: () => number = Date.now,
  ) {}

  get membership(): Membership {
    return { self: this.self, peers: this.#effective(), changedAt: this.#changedAt };
  }

  /** Replaces the listed peers (from every slice of the Service together). */
  update(peers: Iterable<string>): boolean {
    const next = [...new Set(peers)].sort();
    if (next.length === this.#peers.length && next.every((p, i) => p === this.#peers[i])) return false;
    const first = this.#peers.length === 0 && this.#changedAt === 0;
    this.#peers = next;
    // the first listing is where we start from, not a change of owners
    if (!first) this.#changedAt = this.now();
    return true;
  }

  /** The owner of `namespace/name`; this replica's own id when it owns it. */
  ownerOf(namespace: string, name: string): string {
    return this.ownerOfKey(`${namespace}/${name}`);
  }

  /** The owner of any key (a namespace, where every name in it must have one owner). */
  ownerOfKey(key: string): string {
    return ownerOf(key, this.#effective()) ?? this.self;
  }

  owns(namespace: string, name: string): boolean {
    return this.ownerOf(namespace, name) === this.self;
  }

  /** The other listed peers (for a name whose owner may have just changed). */
  others(): string[] {
    return this.#effective().filter((p) => p !== this.self);
  }

  /** Whether the peer set changed within the last `windowMs` (owners may still be moving). */
  changedWithin(windowMs: number): boolean {
    return this.#changedAt !== 0 && this.now() - this.#changedAt < windowMs;
  }

  #effective(): readonly string[] {
    if (this.self === '' || this.#peers.length === 0) return [this.self];
    return this.#peers;
  }
}

/**
 * Feeds a PeerSet from the EndpointSlices of `service` in `namespace`
 * (`kubernetes.io/service-name=<service>`): list, then watch. `role` names the replicas in logs.
 */
export function startPeerInformer(
  kc: KubeConfig,
  peers: PeerSet,
  service: { name: string; namespace: string; role: string },
  log: Logger,
): Informer<EndpointSlice> {
  const informer = createInformer<EndpointSlice>(kc, {
    resource: ENDPOINT_SLICE_RESOURCE,
    namespace: service.namespace,
    labelSelector: `kubernetes.io/service-name=${service.name}`,
    parse: (obj) => parseObject(EndpointSliceSchema, obj),
    log,
  });
  const refresh = (): void => {
    const listed = informer.list(service.namespace).flatMap((s) => peersOfSlice(s));
    if (peers.update(listed)) log.info({ peers: peers.membership.peers, self: peers.self }, `${service.role} peers changed`);
  };
  informer.on({ add: refresh, update: refresh, delete: refresh });
  informer.start();
  return informer;
}

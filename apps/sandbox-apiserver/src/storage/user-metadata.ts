import type { KubeConfig } from '@kubernetes/client-node';
import {
  ConfigMapResource,
  createInformer,
  isAlreadyExists,
  isNotFound,
  ResourceClient,
  type Informer,
  type Logger,
} from '@sandbox-scale/kube-runtime';
import { parseUntrustedJson, retry, type ServedSandbox, StatusError } from '@sandbox-scale/scale-core';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import { OwnerSchema, toManagedFields } from './managed-fields';
import type { UserMetadata } from './patch-sandbox';

/**
 * Labels and annotations users give sandboxes (at create, or by kubectl label/annotate/patch).
 * A sandbox is synthesized from its node's inventory on every read, so what users add lives
 * apart: one ConfigMap per namespace that has any, in sandbox-apiserver's own namespace, named
 * `sandbox-metadata.<namespace>`, with one key per sandbox name holding its uid, labels and
 * annotations. etcd holds O(namespaces) objects more, each written only when a user sets
 * metadata; every replica follows them with one informer, so a change shows on every replica
 * (a MODIFIED event) and survives restarts. The uid ties an entry to one sandbox: a sandbox
 * created again under the same name starts bare. docs/adr/0004-sandbox-user-metadata.md.
 */

export const METADATA_LABEL = 'sandbox.cocoonstack.io/sandbox-metadata-of';
const NAME_PREFIX = 'sandbox-metadata.';
/** A ConfigMap holds 1 MiB; past this a write for the namespace is refused rather than failing half-way. */
export const MAX_NAMESPACE_BYTES = 900 * 1024;

/**
 * What the create asked that the served object does not show: its spec.shutdownTime and its
 * reserved annotations (network lane, TTL). A re-apply of the same manifest repeats them, and is
 * checked against these rather than refused.
 */
export const CreateAsksSchema = z.object({
  shutdownTime: z.string().optional(),
  annotations: z.record(z.string(), z.string()).default({}),
});
export type CreateAsks = z.infer<typeof CreateAsksSchema>;

const EntrySchema = z.object({
  uid: z.string(),
  labels: z.record(z.string(), z.string()).default({}),
  annotations: z.record(z.string(), z.string()).default({}),
  /** Field ownership (served as metadata.managedFields). */
  owners: z.array(OwnerSchema).optional(),
  created: CreateAsksSchema.optional(),
});
export type MetadataEntry = z.infer<typeof EntrySchema>;

/** What one sandbox's entry holds besides its uid. */
export type StoredMetadata = UserMetadata & Pick<MetadataEntry, 'owners' | 'created'>;

/** An entry with nothing to keep: no labels or annotations, no create asks, nobody's applied fields. */
export function isEmptyEntry(md: StoredMetadata): boolean {
  return (
    Object.keys(md.labels).length === 0 &&
    Object.keys(md.annotations).length === 0 &&
    md.created === undefined &&
    !(md.owners ?? []).some((o) => o.operation === 'Apply')
  );
}

const MetadataMapSchema = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: z.looseObject({
    name: z.string(),
    namespace: z.string().optional(),
    resourceVersion: z.string().optional(),
    labels: z.record(z.string(), z.string()).optional(),
  }),
  data: z.record(z.string(), z.string()).optional(),
});
type MetadataMap = z.infer<typeof MetadataMapSchema>;

export class MetadataTooLargeError extends Error {
  override readonly name = 'MetadataTooLargeError';
}

export const configMapNameOf = (namespace: string): string => `${NAME_PREFIX}${namespace}`;

/** Entries of one namespace's ConfigMap; an entry that does not parse is skipped, not fatal. */
export function entriesOf(cm: Pick<MetadataMap, 'data'>): Map<string, MetadataEntry> {
  const out = new Map<string, MetadataEntry>();
  for (const [name, text] of Object.entries(cm.data ?? {})) {
    try {
      out.set(name, EntrySchema.parse(parseUntrustedJson(text)));
    } catch {
      // a hand-edited value (or one holding a key that names a prototype) is ignored, as if the sandbox had no metadata
    }
  }
  return out;
}

/** The served object with the user's labels and annotations merged in; the server's own keys win. */
export function decorate(obj: ServedSandbox, entry: MetadataEntry | undefined): ServedSandbox {
  if (entry === undefined || entry.uid !== obj.metadata.uid) return obj;
  const hasLabels = Object.keys(entry.labels).length > 0;
  const hasAnnotations = Object.keys(entry.annotations).length > 0;
  const owners = entry.owners ?? [];
  if (!hasLabels && !hasAnnotations && owners.length === 0) return obj;
  const annotations = hasAnnotations ? { ...entry.annotations, ...(obj.metadata.annotations ?? {}) } : obj.metadata.annotations;
  return {
    ...obj,
    metadata: {
      ...obj.metadata,
      labels: { ...entry.labels, ...obj.metadata.labels },
      ...(annotations ? { annotations } : {}),
      ...(owners.length > 0 ? { managedFields: toManagedFields(owners) } : {}),
    },
  };
}

export interface UserMetadataStoreOptions {
  readonly kubeConfig: KubeConfig;
  /** sandbox-apiserver's own namespace, where the ConfigMaps live. */
  readonly namespace: string;
  readonly log: Logger;
  /** Told which sandboxes' metadata changed, so the cache can serve them anew (MODIFIED). */
  readonly onChange: (namespace: string, name: string) => void;
  readonly registry?: Registry;
}

/** One write of a namespace's ConfigMap: the keys to set (or, null, to drop), and the one a create starts with. */
interface WritePlan {
  /** The sandboxes' namespace (not the ConfigMap's). */
  readonly namespace: string;
  readonly name: string;
  readonly cmName: string;
  readonly data: Record<string, string | null>;
  readonly value: string | null;
  readonly empty: boolean;
}

export class UserMetadataStore {
  readonly #byNamespace = new Map<string, Map<string, MetadataEntry>>();
  /** The resourceVersion of each namespace's ConfigMap as last applied here: an older one seen later is skipped. */
  readonly #versions = new Map<string, bigint>();
  readonly #client: ResourceClient;
  #informer: Informer<MetadataMap> | undefined;

  constructor(private readonly o: UserMetadataStoreOptions) {
    this.#client = new ResourceClient(o.kubeConfig, ConfigMapResource);
  }

  get(namespace: string, name: string): MetadataEntry | undefined {
    return this.#byNamespace.get(namespace)?.get(name);
  }

  /** Names of the sandboxes of `namespace` that have user metadata. */
  names(namespace: string): string[] {
    return [...(this.#byNamespace.get(namespace)?.keys() ?? [])];
  }

  decorate(obj: ServedSandbox): ServedSandbox {
    return decorate(obj, this.get(obj.metadata.namespace, obj.metadata.name));
  }

  hasSynced(): boolean {
    return this.#informer?.hasSynced() ?? false;
  }

  start(): void {
    const informer = createInformer<MetadataMap>(this.o.kubeConfig, {
      resource: ConfigMapResource,
      namespace: this.o.namespace,
      labelSelector: METADATA_LABEL,
      parse: (obj) => MetadataMapSchema.parse(obj),
      log: this.o.log,
      ...(this.o.registry ? { registry: this.o.registry } : {}),
    });
    informer.on({ add: (cm) => this.#apply(cm), update: (cm) => this.#apply(cm), delete: (cm) => this.#apply({ ...cm, data: {} }) });
    informer.start();
    this.#informer = informer;
  }

  /**
   * Reads one namespace's ConfigMap from kube-apiserver, so a change another replica has just
   * written is known here before this replica reads, modifies and writes the same entries (a
   * server-side apply after kubectl's upgrade of managedFields, two managers one after another).
   */
  async refresh(namespace: string): Promise<void> {
    const cmName = configMapNameOf(namespace);
    let raw: unknown;
    try {
      // a list of the one name (what the informer's grant allows), read from etcd as a GET would be
      raw = await this.#client.list({ namespace: this.o.namespace, fieldSelector: `metadata.name=${cmName}` });
    } catch (err) {
      this.o.log.error({ err, configMap: `${this.o.namespace}/${cmName}` }, 'reading sandbox user metadata failed');
      throw new StatusError(
        'ServiceUnavailable',
        `the labels and annotations of sandboxes in namespace ${namespace} cannot be read right now`,
        { retryAfterSeconds: 1 },
        { cause: err },
      );
    }
    const items = z.object({ items: z.array(MetadataMapSchema) }).safeParse(raw);
    for (const cm of items.success ? items.data.items : []) this.#apply(cm);
  }

  async stop(): Promise<void> {
    await this.#informer?.stop();
  }

  /**
   * Sets (or, with nothing left to keep, clears) the user metadata of one sandbox: a
   * merge patch of one key of its namespace's ConfigMap, created on first use. `stale` names
   * entries of the namespace whose sandbox is gone, dropped in the same write.
   */
  async set(namespace: string, name: string, uid: string, md: StoredMetadata, stale: readonly string[] = []): Promise<void> {
    const empty = isEmptyEntry(md);
    const entry: MetadataEntry = {
      uid,
      labels: { ...md.labels },
      annotations: { ...md.annotations },
      ...(md.owners !== undefined && md.owners.length > 0 ? { owners: md.owners } : {}),
      ...(md.created !== undefined ? { created: md.created } : {}),
    };
    const value = empty ? null : JSON.stringify(entry);
    const data: Record<string, string | null> = Object.fromEntries(stale.filter((s) => s !== name).map((s) => [s, null]));
    data[name] = value;
    const current = this.#byNamespace.get(namespace);
    if (value !== null) {
      let size = value.length + name.length;
      for (const [k, e] of current ?? []) if (k !== name && !stale.includes(k)) size += k.length + JSON.stringify(e).length;
      if (size > MAX_NAMESPACE_BYTES)
        throw new MetadataTooLargeError(
          `the labels and annotations of the sandboxes in namespace ${namespace} would pass ${MAX_NAMESPACE_BYTES} bytes`,
        );
    }
    if (empty && current?.get(name) === undefined && stale.length === 0) return;
    const cmName = configMapNameOf(namespace);
    await this.#write({ namespace, name, cmName, data, value, empty });
    // serve it at once on this replica; the informer confirms it (and tells the others)
    this.#put(namespace, name, value === null ? undefined : entry);
    for (const s of stale) this.#put(namespace, s, undefined);
  }

  async #write(w: WritePlan): Promise<void> {
    try {
      await this.#writeOnce(w);
    } catch (err) {
      // the store's own ConfigMap could not be written (RBAC, a missing namespace): a server fault, not the caller's
      this.o.log.error({ err, configMap: `${this.o.namespace}/${w.cmName}` }, 'writing sandbox user metadata failed');
      throw new StatusError(
        'ServiceUnavailable',
        `the labels and annotations of sandboxes in namespace ${w.namespace} cannot be stored right now`,
        {},
        { cause: err },
      );
    }
  }

  async #writeOnce({ namespace, name, cmName, data, value, empty }: WritePlan): Promise<void> {
    await retry(
      async () => {
        try {
          this.#applyAnswer(await this.#client.mergePatch(this.o.namespace, cmName, { data }));
        } catch (err) {
          if (!isNotFound(err)) throw err;
          if (empty) return;
          const body = {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: cmName, namespace: this.o.namespace, labels: { [METADATA_LABEL]: namespace } },
            data: { [name]: value as string },
          };
          this.#applyAnswer(await this.#client.create(this.o.namespace, body));
        }
      },
      // a create that raced another replica's: patch the one that won
      { attempts: 3, baseMs: 50, maxMs: 500, jitter: 0.5, shouldRetry: (err) => isAlreadyExists(err) },
    );
  }

  /** The ConfigMap a write answered: known here at once, and the informer's older events for it skipped. */
  #applyAnswer(raw: unknown): void {
    const cm = MetadataMapSchema.safeParse(raw);
    if (cm.success) this.#apply(cm.data);
  }

  #put(namespace: string, name: string, entry: MetadataEntry | undefined): void {
    const m = this.#byNamespace.get(namespace) ?? new Map<string, MetadataEntry>();
    const before = m.get(name);
    if (entry === undefined) m.delete(name);
    else m.set(name, entry);
    if (m.size === 0) this.#byNamespace.delete(namespace);
    else this.#byNamespace.set(namespace, m);
    if (JSON.stringify(before) !== JSON.stringify(entry)) this.o.onChange(namespace, name);
  }

  #apply(cm: MetadataMap): void {
    const namespace = cm.metadata.labels?.[METADATA_LABEL] ?? cm.metadata.name.slice(NAME_PREFIX.length);
    // a fresh read (refresh, a write's answer) may be ahead of the informer: its older events are stale
    const rv = cm.metadata.resourceVersion;
    if (rv !== undefined && /^[0-9]+$/.test(rv)) {
      const seen = this.#versions.get(namespace);
      if (seen !== undefined && BigInt(rv) < seen) return;
      this.#versions.set(namespace, BigInt(rv));
    }
    const next = entriesOf(cm);
    const before = this.#byNamespace.get(namespace) ?? new Map<string, MetadataEntry>();
    for (const name of before.keys()) if (!next.has(name)) this.#put(namespace, name, undefined);
    for (const [name, e] of next) this.#put(namespace, name, e);
  }
}

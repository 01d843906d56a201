import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { sleep } from '@sandbox-scale/scale-core';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import { isAlreadyExists, isConflict, isNotFound } from '../client/api-errors';
import { ResourceClient } from '../client/resource-client';
import { APIServiceResource, SecretResource } from '../client/resource';
import type { Logger } from '../log/logger';
import { gauge } from '../metrics/metric-factory';
import type { Runnable } from '../runnable';
import { LOOP_WAIT } from '../time';
import { certFacts, createCA, signLeaf, type CertPair } from './pki';

/** What the keeper keeps, by name (`--keep-certificates`). */
export const KeptObjectsSchema = z.object({
  /** The namespace of every Secret below (the release's). */
  namespace: z.string().min(1),
  /** The CA Secret (kubernetes.io/tls: tls.crt, tls.key); '' = no CA and no serving certificates. */
  caSecret: z.string().default(''),
  /** Serving Secrets (kubernetes.io/tls: tls.crt, tls.key, ca.crt) the CA signs, each for its DNS names. */
  serving: z.array(z.object({ secret: z.string().min(1), dnsNames: z.array(z.string().min(1)).min(1) })).default([]),
  /** The claim-reference key Secret (Opaque: `key`, base64 of 32 random bytes); '' = none. */
  claimRefKeySecret: z.string().default(''),
  /** The APIService whose caBundle follows the CA; '' = none. */
  apiService: z.string().default(''),
});
export type KeptObjects = z.infer<typeof KeptObjectsSchema>;

export interface KeeperTimes {
  caValidityMs: number;
  servingValidityMs: number;
  /** A serving certificate is signed again this long before it ends. */
  renewBeforeMs: number;
  /** Checked again at least this often (and at each serving certificate's renewal time). */
  resyncMs: number;
}

export interface CertificateKeeperOptions {
  kubeConfig: KubeConfig;
  objects: KeptObjects;
  times: KeeperTimes;
  /** Written as the field manager and as the value of KEPT_BY_LABEL on every Secret it creates. */
  manager: string;
  log: Logger;
  registry: Registry;
}

/**
 * The label on every Secret the keeper created: only those does it sign again. A Secret of the
 * same name without it (one the user provides) is used as it is and never written.
 */
export const KEPT_BY_LABEL = 'sandbox-scale.io/kept-by';

const ON_ERROR_MS = 15_000;
const DAY_MS = 86_400_000;

const TlsSecretSchema = z.object({
  metadata: z.object({ resourceVersion: z.string().optional(), labels: z.record(z.string(), z.string()).optional() }),
  data: z.record(z.string(), z.string()).optional(),
});
type TlsSecret = z.infer<typeof TlsSecretSchema>;
const APIServiceSchema = z.object({
  spec: z.object({ caBundle: z.string().optional(), insecureSkipTLSVerify: z.boolean().optional() }).optional(),
});

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');
const unb64 = (s: string | undefined): string => (s === undefined ? '' : Buffer.from(s, 'base64').toString('utf8'));

/**
 * Creates the control plane's CA, serving certificates and claim-reference key once, when they
 * are absent, and never replaces one it did not make; signs its serving certificates again
 * before they end, or when the CA or their names changed; and keeps the APIService's caBundle in
 * step with the CA. Templates then generate nothing, so one render is like the next.
 *
 * It runs on the leader only, and reads its few named objects with GETs on each pass rather than
 * from a cache: a handful of objects every few minutes, where a cache would hold every Secret of
 * the namespace. Every write is a create (409: someone else made it, read it again) or a replace
 * at the read resourceVersion, so two keepers during a leader change never both win.
 */
export class CertificateKeeper implements Runnable {
  readonly name = 'certificate-keeper';
  readonly needLeaderElection = true;
  readonly #secrets: ResourceClient;
  readonly #apiServices: ResourceClient;
  readonly #expiry;

  constructor(private readonly o: CertificateKeeperOptions) {
    this.#secrets = new ResourceClient(o.kubeConfig, SecretResource);
    this.#apiServices = new ResourceClient(o.kubeConfig, APIServiceResource);
    this.#expiry = gauge(
      o.registry,
      'sandbox_scale_certificate_expiry_timestamp_seconds',
      'When each certificate this replica keeps ends (Unix seconds), by Secret; renewed renewBefore ahead',
      ['secret'],
    );
  }

  async start(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let waitMs: number;
      try {
        waitMs = await this.keepOnce(signal);
      } catch (err) {
        if (signal.aborted) return;
        this.o.log.warn({ err }, 'keeping the certificates failed; trying again');
        waitMs = ON_ERROR_MS;
      }
      await sleep(waitMs, signal, LOOP_WAIT);
    }
  }

  /** One pass over everything kept; resolves with how long until the next is due. */
  async keepOnce(signal?: AbortSignal): Promise<number> {
    const { objects, times } = this.o;
    let next = times.resyncMs;
    const ca = objects.caSecret === '' ? undefined : await this.#ensureCA(signal);
    if (ca !== undefined) {
      for (const s of objects.serving) {
        const notAfterMs = await this.#ensureServing(s.secret, s.dnsNames, ca, signal);
        if (notAfterMs !== undefined) next = Math.min(next, Math.max(ON_ERROR_MS, notAfterMs - times.renewBeforeMs - Date.now()));
      }
      if (objects.apiService !== '') await this.#syncCaBundle(objects.apiService, ca, signal);
    }
    if (objects.claimRefKeySecret !== '') await this.#ensureClaimRefKey(objects.claimRefKeySecret, signal);
    return next;
  }

  async #read(name: string, signal?: AbortSignal): Promise<TlsSecret | undefined> {
    try {
      return TlsSecretSchema.parse(await this.#secrets.get(this.o.objects.namespace, name, signal));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Creates the Secret; false when one of that name appeared meanwhile (it is read on the next pass). */
  async #create(name: string, type: string, data: Record<string, string>, signal?: AbortSignal): Promise<boolean> {
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace: this.o.objects.namespace, labels: { [KEPT_BY_LABEL]: labelValue(this.o.manager) } },
      type,
      data,
    };
    try {
      await this.#secrets.create(this.o.objects.namespace, body, { fieldManager: this.o.manager, ...(signal ? { signal } : {}) });
      return true;
    } catch (err) {
      if (isAlreadyExists(err)) return false;
      throw err;
    }
  }

  async #ensureCA(signal?: AbortSignal): Promise<CertPair | undefined> {
    const name = this.o.objects.caSecret;
    const existing = await this.#read(name, signal);
    if (existing === undefined) {
      const ca = await createCA(`${name}@${Math.floor(Date.now() / 1000)}`, this.o.times.caValidityMs / DAY_MS);
      if (!(await this.#create(name, 'kubernetes.io/tls', { 'tls.crt': b64(ca.cert), 'tls.key': b64(ca.key) }, signal))) return undefined; // made by another writer meanwhile: the next pass reads it
      this.o.log.info({ secret: name }, 'created the CA');
      this.#observe(name, ca.cert);
      return ca;
    }
    const ca = { cert: unb64(existing.data?.['tls.crt']), key: unb64(existing.data?.['tls.key']) };
    if (certFacts(ca.cert) === undefined || ca.key === '') {
      // never replaced: whoever made it may still rely on it; say what is wrong instead
      this.o.log.error({ secret: name }, 'the CA Secret holds no usable tls.crt and tls.key; nothing is signed until it does');
      return undefined;
    }
    this.#observe(name, ca.cert);
    return ca;
  }

  /** The serving Secret, created or signed again when due; resolves with its end, or undefined for one kept by someone else. */
  async #ensureServing(name: string, dnsNames: readonly string[], ca: CertPair, signal?: AbortSignal): Promise<number | undefined> {
    const existing = await this.#read(name, signal);
    if (existing !== undefined && existing.metadata.labels?.[KEPT_BY_LABEL] === undefined) return undefined;
    const current = existing === undefined ? undefined : certFacts(unb64(existing.data?.['tls.crt']));
    const why =
      existing === undefined
        ? 'absent'
        : current === undefined
          ? 'unreadable'
          : !current.signedBy(ca.cert) || unb64(existing.data?.['ca.crt']) !== ca.cert
            ? 'signed by another CA'
            : !sameNames(current.dnsNames, dnsNames)
              ? 'names changed'
              : current.notAfterMs - this.o.times.renewBeforeMs <= Date.now()
                ? 'due for renewal'
                : undefined;
    if (why === undefined && current !== undefined) {
      this.#observe(name, unb64(existing?.data?.['tls.crt']));
      return current.notAfterMs;
    }
    const leaf = await signLeaf(ca, { commonName: dnsNames[0] ?? name, dnsNames, validDays: this.o.times.servingValidityMs / DAY_MS });
    const data = { 'tls.crt': b64(leaf.cert), 'tls.key': b64(leaf.key), 'ca.crt': b64(ca.cert) };
    if (existing === undefined) {
      if (!(await this.#create(name, 'kubernetes.io/tls', data, signal))) return undefined;
    } else {
      const body = {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { ...existing.metadata, name, namespace: this.o.objects.namespace },
        type: 'kubernetes.io/tls',
        data,
      };
      try {
        await this.#secrets.replace(this.o.objects.namespace, name, body, { fieldManager: this.o.manager, ...(signal ? { signal } : {}) });
      } catch (err) {
        // another writer moved it since the read: the next pass reads it again
        if (isConflict(err)) return undefined;
        throw err;
      }
    }
    this.o.log.info({ secret: name, why }, 'signed a serving certificate');
    this.#observe(name, leaf.cert);
    return certFacts(leaf.cert)?.notAfterMs;
  }

  async #ensureClaimRefKey(name: string, signal?: AbortSignal): Promise<void> {
    if ((await this.#read(name, signal)) !== undefined) return;
    // the key file holds base64 of 32 random bytes; the Secret's data is that text, base64 again
    if (await this.#create(name, 'Opaque', { key: b64(randomBytes(32).toString('base64')) }, signal))
      this.o.log.info({ secret: name }, 'created the claim-reference key');
  }

  async #syncCaBundle(name: string, ca: CertPair, signal?: AbortSignal): Promise<void> {
    let svc: z.infer<typeof APIServiceSchema>;
    try {
      svc = APIServiceSchema.parse(await this.#apiServices.get(undefined, name, signal));
    } catch (err) {
      // not installed (yet): the next pass looks again
      if (isNotFound(err)) return;
      throw err;
    }
    const want = b64(ca.cert);
    if (svc.spec?.insecureSkipTLSVerify === true || svc.spec?.caBundle === want) return;
    await this.#apiServices.mergePatch(
      undefined,
      name,
      { spec: { caBundle: want } },
      { fieldManager: this.o.manager, ...(signal ? { signal } : {}) },
    );
    this.o.log.info({ apiService: name }, 'set the caBundle to the CA');
  }

  #observe(secret: string, pem: string): void {
    const facts = certFacts(pem);
    if (facts !== undefined) this.#expiry.set({ secret }, Math.floor(facts.notAfterMs / 1000));
  }
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');
}

/** A label value from a field manager name (`sandbox-scale/warmpool-driver` → `sandbox-scale.warmpool-driver`). */
function labelValue(manager: string): string {
  return manager.replace(/[^A-Za-z0-9_.-]/g, '.').slice(0, 63);
}

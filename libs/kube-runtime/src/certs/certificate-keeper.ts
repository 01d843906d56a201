import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { OwnerRefKey, sleep } from '@sandbox-scale/scale-core';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import { isAlreadyExists, isConflict, isNotFound } from '../client/api-errors';
import { ResourceClient } from '../client/resource-client';
import { APIServiceResource, SecretResource } from '../client/resource';
import { parseUntyped, type KubeObject } from '../client/object-meta';
import { createInformer, type Informer } from '../informer/informer';
import type { Logger } from '../log/logger';
import { gauge } from '../metrics/metric-factory';
import type { Runnable } from '../runnable';
import { LOOP_WAIT } from '../time';
import { advance, phaseEndsAt, rotationStep, trustBundle, type CaState } from './ca-rotation';
import { advanceKeyring, keyRotationStep, keyringStepAt, keyringText, keysOfText, type KeyringState } from './key-rotation';
import { certFacts, createCA, signLeaf, type CertPair } from './pki';

/** What the keeper keeps, by name (`--keep-certificates`). */
export const KeptObjectsSchema = z.object({
  /** The namespace of every Secret below (the release's). */
  namespace: z.string().min(1),
  /** The CA Secret (kubernetes.io/tls: tls.crt, tls.key); '' = no CA and no serving certificates. */
  caSecret: z.string().default(''),
  /** Serving Secrets (kubernetes.io/tls: tls.crt, tls.key, ca.crt) the CA signs, each for its DNS names. */
  serving: z.array(z.object({ secret: z.string().min(1), dnsNames: z.array(z.string().min(1)).min(1) })).default([]),
  /** The claim-reference key Secret (Opaque: `key`, one base64 key of 32 random bytes per line, the first signs); '' = none. */
  claimRefKeySecret: z.string().default(''),
  /** The APIService whose caBundle follows the CA; '' = none. */
  apiService: z.string().default(''),
});
export type KeptObjects = z.infer<typeof KeptObjectsSchema>;

export interface KeeperTimes {
  caValidityMs: number;
  /** The CA is rotated this long before it ends (0 = on request only). */
  caRenewBeforeMs: number;
  /** Each step of a CA rotation, and the first of a key rotation, is held this long, so every pod has read the step before. */
  caRotationOverlapMs: number;
  /** Old claim-reference keys still verify this long after a new one signs. */
  claimRefKeyGraceMs: number;
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

/** Set (to any new value) on the CA Secret to rotate the CA now: `kubectl annotate secret <ca> sandbox-scale.io/rotate-ca=$(date +%s) --overwrite`. */
export const ROTATE_CA_ANNOTATION = 'sandbox-scale.io/rotate-ca';
const ROTATED_CA_ANNOTATION = 'sandbox-scale.io/rotated-ca';
const PHASE_ANNOTATION = 'sandbox-scale.io/ca-rotation';
const SINCE_ANNOTATION = 'sandbox-scale.io/ca-rotation-since';

/** Set (to any new value) on the claim-reference key Secret to rotate the key: `kubectl annotate secret <key> sandbox-scale.io/rotate-key=$(date +%s) --overwrite`. */
export const ROTATE_KEY_ANNOTATION = 'sandbox-scale.io/rotate-key';
const ROTATED_KEY_ANNOTATION = 'sandbox-scale.io/rotated-key';
const KEY_PHASE_ANNOTATION = 'sandbox-scale.io/key-rotation';
const KEY_SINCE_ANNOTATION = 'sandbox-scale.io/key-rotation-since';

/** The CA that signs now and the bundle every client trusts (both CAs while a rotation overlaps). */
interface Authority {
  signing: CertPair;
  bundle: string;
  /** When the rotation under way next needs a step (ms), if one is. */
  stepAtMs?: number;
}

const ON_ERROR_MS = 15_000;
const DAY_MS = 86_400_000;

const TlsSecretSchema = z.object({
  metadata: z.object({
    resourceVersion: z.string().optional(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
  }),
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
    // a change of the CA Secret (a rotation asked for, a CA replaced by hand) ends the wait at
    // once, as does the stop; each pass gets a controller of its own
    let wake = new AbortController();
    const onStop = (): void => wake.abort();
    signal.addEventListener('abort', onStop, { once: true });
    // the CA and the key Secret: a rotation asked for on either is acted on at once
    const watches = [this.o.objects.caSecret, this.o.objects.claimRefKeySecret]
      .filter((n) => n !== '')
      .map((secret) =>
        this.#watchSecret(secret, () => {
          this.o.log.debug({ secret }, 'a kept Secret changed: looking now');
          wake.abort();
        }),
      );
    try {
      while (!signal.aborted) {
        // fresh before the pass: a change during it ends the wait after it at once
        wake = new AbortController();
        let waitMs: number;
        try {
          waitMs = await this.keepOnce(signal);
        } catch (err) {
          if (signal.aborted) return;
          this.o.log.warn({ err }, 'keeping the certificates failed; trying again');
          waitMs = ON_ERROR_MS;
        }
        this.o.log.debug({ waitMs }, 'certificates kept; next look');
        await sleep(waitMs, wake.signal, LOOP_WAIT);
      }
    } finally {
      signal.removeEventListener('abort', onStop);
      await Promise.all(watches.map((w) => w.stop()));
    }
  }

  /** An informer of one Secret alone (by name), calling `changed` on each event. */
  #watchSecret(name: string, changed: () => void): Informer<KubeObject> {
    const informer = createInformer<KubeObject>(this.o.kubeConfig, {
      resource: SecretResource,
      namespace: this.o.objects.namespace,
      fieldSelector: `metadata.name=${name}`,
      // its metadata only: the cache never holds a key
      parse: (obj) => ({ metadata: parseUntyped(obj).metadata }),
      log: this.o.log,
    });
    informer.on({ add: changed, update: changed, delete: changed });
    informer.start();
    return informer;
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
      // a rotation's next step is due at the end of its overlap, not at the next resync
      if (ca.stepAtMs !== undefined) next = Math.min(next, Math.max(1_000, ca.stepAtMs - Date.now()));
    }
    if (objects.claimRefKeySecret !== '') {
      const stepAtMs = await this.#ensureClaimRefKey(objects.claimRefKeySecret, signal);
      if (stepAtMs !== undefined) next = Math.min(next, Math.max(1_000, stepAtMs - Date.now()));
    }
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

  async #ensureCA(signal?: AbortSignal): Promise<Authority | undefined> {
    const name = this.o.objects.caSecret;
    const existing = await this.#read(name, signal);
    if (existing === undefined) {
      const ca = await createCA(`${name}@${Math.floor(Date.now() / 1000)}`, this.o.times.caValidityMs / DAY_MS);
      // made by another writer meanwhile: the next pass reads it
      if (!(await this.#create(name, 'kubernetes.io/tls', { 'tls.crt': b64(ca.cert), 'tls.key': b64(ca.key) }, signal))) return undefined;
      this.o.log.info({ secret: name }, 'created the CA');
      this.#observe(name, ca.cert);
      return { signing: ca, bundle: trustBundle({ signing: ca }) };
    }
    let state = caStateOf(existing);
    const facts = state === undefined ? undefined : certFacts(state.signing.cert);
    if (state === undefined || facts === undefined) {
      // never replaced: whoever made it may still rely on it; say what is wrong instead
      this.o.log.error({ secret: name }, 'the CA Secret holds no usable tls.crt and tls.key; nothing is signed until it does');
      return undefined;
    }
    // a CA the user provides is used as it is: rotating it is theirs
    if (existing.metadata.labels?.[KEPT_BY_LABEL] !== undefined) {
      const { times } = this.o;
      const requested = existing.metadata.annotations?.[ROTATE_CA_ANNOTATION];
      const now = Date.now();
      const step = rotationStep(state, {
        now,
        overlapMs: times.caRotationOverlapMs,
        renewBeforeMs: times.caRenewBeforeMs,
        signingNotAfterMs: facts.notAfterMs,
        requested,
      });
      if (step.kind === 'advance') {
        const made =
          step.to === 'trusting-new' ? await createCA(`${name}@${Math.floor(now / 1000)}`, times.caValidityMs / DAY_MS) : undefined;
        const nextState = advance(state, step.to, now, made, requested);
        if (!(await this.#writeCA(name, existing, nextState, signal))) return undefined;
        this.o.log.info({ secret: name, step: step.to }, 'CA rotation: next step');
        state = nextState;
      }
    }
    this.#observe(name, state.signing.cert);
    const stepAtMs = phaseEndsAt(state, this.o.times.caRotationOverlapMs);
    return { signing: state.signing, bundle: trustBundle(state), ...(stepAtMs !== undefined ? { stepAtMs } : {}) };
  }

  /** Writes the CA state at the version read; false when another writer moved it (the next pass reads it again). */
  async #writeCA(name: string, existing: TlsSecret, state: CaState, signal?: AbortSignal): Promise<boolean> {
    const annotations = Object.fromEntries(
      Object.entries(existing.metadata.annotations ?? {}).filter(
        ([k]) => ![PHASE_ANNOTATION, SINCE_ANNOTATION, ROTATED_CA_ANNOTATION].includes(k),
      ),
    );
    if (state.phase !== undefined) annotations[PHASE_ANNOTATION] = state.phase;
    if (state.sinceMs !== undefined && state.phase !== undefined) annotations[SINCE_ANNOTATION] = new Date(state.sinceMs).toISOString();
    if (state.handled !== undefined) annotations[ROTATED_CA_ANNOTATION] = state.handled;
    const data: Record<string, string> = { 'tls.crt': b64(state.signing.cert), 'tls.key': b64(state.signing.key) };
    if (state.next !== undefined) Object.assign(data, { 'next.crt': b64(state.next.cert), 'next.key': b64(state.next.key) });
    if (state.previous !== undefined) data['previous.crt'] = b64(state.previous);
    return this.#replace(name, { ...existing.metadata, annotations }, 'kubernetes.io/tls', data, signal);
  }

  /** Replaces the Secret at the resourceVersion in `metadata`; false when another writer moved it since (the next pass reads it again). */
  async #replace(
    name: string,
    metadata: TlsSecret['metadata'],
    type: string,
    data: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<boolean> {
    const body = { apiVersion: 'v1', kind: 'Secret', metadata: { ...metadata, name, namespace: this.o.objects.namespace }, type, data };
    try {
      await this.#secrets.replace(this.o.objects.namespace, name, body, { fieldManager: this.o.manager, ...(signal ? { signal } : {}) });
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
  }

  /**
   * The serving Secret, created or signed again when due (or its `ca.crt` alone brought to the
   * bundle while a CA rotation overlaps); resolves with its end, or undefined for one kept by
   * someone else.
   */
  async #ensureServing(name: string, dnsNames: readonly string[], ca: Authority, signal?: AbortSignal): Promise<number | undefined> {
    const existing = await this.#read(name, signal);
    if (existing !== undefined && existing.metadata.labels?.[KEPT_BY_LABEL] === undefined) return undefined;
    const current = existing === undefined ? undefined : certFacts(unb64(existing.data?.['tls.crt']));
    const why =
      existing === undefined
        ? 'absent'
        : current === undefined
          ? 'unreadable'
          : !current.signedBy(ca.signing.cert)
            ? 'signed by another CA'
            : !sameNames(current.dnsNames, dnsNames)
              ? 'names changed'
              : current.notAfterMs - this.o.times.renewBeforeMs <= Date.now()
                ? 'due for renewal'
                : undefined;
    const bundle = b64(ca.bundle);
    if (why === undefined && current !== undefined && existing?.data?.['ca.crt'] === bundle) {
      this.#observe(name, unb64(existing.data['tls.crt']));
      return current.notAfterMs;
    }
    let data: Record<string, string>;
    let notAfterMs: number | undefined;
    if (why === undefined && existing?.data !== undefined) {
      // the certificate stands; only the CAs its clients trust changed
      data = { ...existing.data, 'ca.crt': bundle };
      notAfterMs = current?.notAfterMs;
    } else {
      const leaf = await signLeaf(ca.signing, {
        commonName: dnsNames[0] ?? name,
        dnsNames,
        validDays: this.o.times.servingValidityMs / DAY_MS,
      });
      data = { 'tls.crt': b64(leaf.cert), 'tls.key': b64(leaf.key), 'ca.crt': bundle };
      notAfterMs = certFacts(leaf.cert)?.notAfterMs;
    }
    if (existing === undefined) {
      if (!(await this.#create(name, 'kubernetes.io/tls', data, signal))) return undefined;
    } else if (!(await this.#replace(name, existing.metadata, 'kubernetes.io/tls', data, signal))) {
      return undefined;
    }
    this.o.log.info({ secret: name, why: why ?? 'trusted CAs changed' }, 'wrote a serving certificate');
    this.#observe(name, unb64(data['tls.crt']));
    return notAfterMs;
  }

  /**
   * The claim-reference key, created when absent and rotated in steps on request (only one this
   * keeper made: a user's keyring is theirs to rotate); resolves with when its rotation next needs
   * a step, if one is under way.
   */
  async #ensureClaimRefKey(name: string, signal?: AbortSignal): Promise<number | undefined> {
    const existing = await this.#read(name, signal);
    if (existing === undefined) {
      // the key file holds base64 of 32 random bytes; the Secret's data is that text, base64 again
      if (await this.#create(name, 'Opaque', { key: b64(keyringText({ keys: [newClaimRefKey()] })) }, signal))
        this.o.log.info({ secret: name }, 'created the claim-reference key');
      return undefined;
    }
    if (existing.metadata.labels?.[KEPT_BY_LABEL] === undefined) return undefined;
    const keys = keysOfText(unb64(existing.data?.key));
    if (keys.length === 0) {
      // never replaced: references on nodes were made with what it held; say what is wrong instead
      this.o.log.error({ secret: name }, 'the claim-reference key Secret holds no key; nothing is rotated until it does');
      return undefined;
    }
    let state = keyringStateOf(existing, keys);
    const times = { overlapMs: this.o.times.caRotationOverlapMs, graceMs: this.o.times.claimRefKeyGraceMs };
    const requested = existing.metadata.annotations?.[ROTATE_KEY_ANNOTATION];
    const now = Date.now();
    const step = keyRotationStep(state, { now, ...times, requested });
    if (step.kind === 'advance') {
      const next = advanceKeyring(state, step.to, now, step.to === 'adding' ? newClaimRefKey() : undefined, requested);
      const annotations = Object.fromEntries(
        Object.entries(existing.metadata.annotations ?? {}).filter(
          ([k]) => ![KEY_PHASE_ANNOTATION, KEY_SINCE_ANNOTATION, ROTATED_KEY_ANNOTATION].includes(k),
        ),
      );
      if (next.phase !== undefined) annotations[KEY_PHASE_ANNOTATION] = next.phase;
      if (next.phase !== undefined && next.sinceMs !== undefined) annotations[KEY_SINCE_ANNOTATION] = new Date(next.sinceMs).toISOString();
      if (next.handled !== undefined) annotations[ROTATED_KEY_ANNOTATION] = next.handled;
      const text = keyringText(next);
      if (!(await this.#replace(name, { ...existing.metadata, annotations }, 'Opaque', { ...existing.data, key: b64(text) }, signal)))
        return undefined;
      // the ids are hashes: the log says which keys sign and verify, never the keys
      this.o.log.info({ secret: name, step: step.to, keyIds: OwnerRefKey.fromText(text).ids }, 'claim-reference key rotation: next step');
      state = next;
    }
    return keyringStepAt(state, times);
  }

  async #syncCaBundle(name: string, ca: Authority, signal?: AbortSignal): Promise<void> {
    let svc: z.infer<typeof APIServiceSchema>;
    try {
      svc = APIServiceSchema.parse(await this.#apiServices.get(undefined, name, signal));
    } catch (err) {
      // not installed (yet): the next pass looks again
      if (isNotFound(err)) return;
      throw err;
    }
    const want = b64(ca.bundle);
    if (svc.spec?.insecureSkipTLSVerify === true || svc.spec?.caBundle === want) return;
    await this.#apiServices.mergePatch(
      undefined,
      name,
      { spec: { caBundle: want } },
      { fieldManager: this.o.manager, ...(signal ? { signal } : {}) },
    );
    this.o.log.info({ apiService: name }, 'set the caBundle to the CAs clients trust');
  }

  #observe(secret: string, pem: string): void {
    const facts = certFacts(pem);
    if (facts !== undefined) this.#expiry.set({ secret }, Math.floor(facts.notAfterMs / 1000));
  }
}

/** The CA state the Secret holds; undefined without a signing CA and key. */
function caStateOf(secret: TlsSecret): CaState | undefined {
  const d = secret.data ?? {};
  const signing = { cert: unb64(d['tls.crt']), key: unb64(d['tls.key']) };
  if (signing.cert === '' || signing.key === '') return undefined;
  const a = secret.metadata.annotations ?? {};
  const phase = a[PHASE_ANNOTATION];
  const next =
    d['next.crt'] !== undefined && d['next.key'] !== undefined ? { cert: unb64(d['next.crt']), key: unb64(d['next.key']) } : undefined;
  const since = a[SINCE_ANNOTATION] !== undefined ? Date.parse(a[SINCE_ANNOTATION]) : undefined;
  return {
    signing,
    ...(next !== undefined ? { next } : {}),
    ...(d['previous.crt'] !== undefined ? { previous: unb64(d['previous.crt']) } : {}),
    ...(phase === 'trusting-new' || phase === 'dropping-old' ? { phase } : {}),
    ...(since !== undefined && !Number.isNaN(since) ? { sinceMs: since } : {}),
    ...(a[ROTATED_CA_ANNOTATION] !== undefined ? { handled: a[ROTATED_CA_ANNOTATION] } : {}),
  };
}

/** The rotation state of a keyring Secret this keeper made. */
function keyringStateOf(secret: TlsSecret, keys: readonly string[]): KeyringState {
  const a = secret.metadata.annotations ?? {};
  const phase = a[KEY_PHASE_ANNOTATION];
  const since = a[KEY_SINCE_ANNOTATION] !== undefined ? Date.parse(a[KEY_SINCE_ANNOTATION]) : undefined;
  return {
    keys,
    ...(phase === 'adding' || phase === 'signing' ? { phase } : {}),
    ...(since !== undefined && !Number.isNaN(since) ? { sinceMs: since } : {}),
    ...(a[ROTATED_KEY_ANNOTATION] !== undefined ? { handled: a[ROTATED_KEY_ANNOTATION] } : {}),
  };
}

/** A new claim-reference key: 32 random bytes, base64, as one line of the keyring. */
const newClaimRefKey = (): string => randomBytes(32).toString('base64');

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');
}

/** A label value from a field manager name (`sandbox-scale/warmpool-driver` → `sandbox-scale.warmpool-driver`). */
function labelValue(manager: string): string {
  return manager.replace(/[^A-Za-z0-9_.-]/g, '.').slice(0, 63);
}

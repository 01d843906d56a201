import { Registry } from 'prom-client';
import { formatOwnerRef, OwnerRefKey, provenOwnerOf, type SandboxOwner } from '@sandbox-scale/scale-core';
import { z } from 'zod';
import { createTestNamespace, deleteNamespace, eventually, testKubeConfig } from '@sandbox-scale/e2e';
import {
  APIServiceResource,
  CertificateKeeper,
  KEPT_BY_LABEL,
  ROTATE_CA_ANNOTATION,
  ROTATE_KEY_ANNOTATION,
  ResourceClient,
  SecretResource,
  certFacts,
  createCA,
  signLeaf,
  type KeeperTimes,
  type KeptObjects,
} from '../src/index';
import { captureLog } from '../src/testing';

// The keeper against a real API server: it makes what is absent, leaves what exists and is
// sound, signs its own serving certificates again when due, and never writes a Secret it did
// not make.

const kc = testKubeConfig();
const secrets = new ResourceClient(kc, SecretResource);
const apiServices = new ResourceClient(kc, APIServiceResource);
const DAY = 86_400_000;
const TIMES: KeeperTimes = {
  caValidityMs: 3650 * DAY,
  caRenewBeforeMs: 365 * DAY,
  caRotationOverlapMs: 1_500,
  claimRefKeyGraceMs: 3_000,
  servingValidityMs: 90 * DAY,
  renewBeforeMs: 30 * DAY,
  resyncMs: 600_000,
};
const GROUP = `keeper-${process.pid}.example.com`;
const API_SERVICE = `v1.${GROUP}`;
let ns: string;

const SecretSchema = z.object({
  metadata: z.object({
    resourceVersion: z.string(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
  }),
  type: z.string().optional(),
  data: z.record(z.string(), z.string()),
});
const read = async (name: string) => SecretSchema.parse(await secrets.get(ns, name));
const text = (s: z.infer<typeof SecretSchema>, key: string): string => Buffer.from(s.data[key] ?? '', 'base64').toString('utf8');
const caBundle = async (): Promise<string | undefined> =>
  z.object({ spec: z.object({ caBundle: z.string().optional() }) }).parse(await apiServices.get(undefined, API_SERVICE)).spec.caBundle;

/** The APIService's caBundle as text, trimmed. */
const bundleText = async (): Promise<string> =>
  Buffer.from((await caBundle()) ?? '', 'base64')
    .toString('utf8')
    .trim();

function objects(over: Partial<KeptObjects> = {}): KeptObjects {
  return {
    namespace: ns,
    caSecret: 'demo-ca',
    serving: [
      { secret: 'demo-apiserver-serving', dnsNames: [`demo-apiserver.${ns}.svc`, `demo-router.${ns}.svc`] },
      { secret: 'demo-fast-path-serving', dnsNames: [`demo-fast-path.${ns}.svc`] },
    ],
    claimRefKeySecret: 'demo-claim-ref-key',
    apiService: API_SERVICE,
    ...over,
  };
}
const keeper = (over: Partial<KeptObjects> = {}, times: Partial<KeeperTimes> = {}) =>
  new CertificateKeeper({
    kubeConfig: kc,
    objects: objects(over),
    times: { ...TIMES, ...times },
    manager: 'sandbox-scale/keeper-test',
    log: captureLog().log,
    registry: new Registry(),
  });
const versions = async (): Promise<string[]> =>
  Promise.all(
    ['demo-ca', 'demo-apiserver-serving', 'demo-fast-path-serving', 'demo-claim-ref-key'].map(
      async (n) => (await read(n)).metadata.resourceVersion,
    ),
  );

beforeAll(async () => {
  ns = await createTestNamespace(kc, 'kr-keeper');
  // an APIService of the suite's own: the keeper sets its caBundle (nothing serves it)
  await apiServices.create(undefined, {
    apiVersion: 'apiregistration.k8s.io/v1',
    kind: 'APIService',
    metadata: { name: API_SERVICE },
    spec: {
      group: GROUP,
      version: 'v1',
      groupPriorityMinimum: 10,
      versionPriority: 10,
      service: { namespace: ns, name: 'demo-apiserver', port: 443 },
    },
  });
});
afterAll(async () => {
  await apiServices.delete(undefined, API_SERVICE).catch(() => undefined);
  await deleteNamespace(kc, ns);
});

describe('the certificate keeper', () => {
  it('creates the CA, the serving certificates it signs, the claim-reference key and the caBundle, once', async () => {
    const next = await keeper().keepOnce();
    expect(next).toBe(TIMES.resyncMs);
    const ca = await read('demo-ca');
    expect(ca.type).toBe('kubernetes.io/tls');
    expect(ca.metadata.labels?.[KEPT_BY_LABEL]).toBe('sandbox-scale.keeper-test');
    const caPem = text(ca, 'tls.crt');
    for (const s of objects().serving) {
      const serving = await read(s.secret);
      const facts = certFacts(text(serving, 'tls.crt'));
      expect({ names: facts?.dnsNames.sort(), signed: facts?.signedBy(caPem), ca: text(serving, 'ca.crt').trim() }).toEqual({
        names: [...s.dnsNames].sort(),
        signed: true,
        ca: caPem.trim(),
      });
      const days = ((facts?.notAfterMs ?? 0) - Date.now()) / DAY;
      expect(days).toBeGreaterThan(89);
      expect(days).toBeLessThanOrEqual(90);
    }
    const key = Buffer.from(text(await read('demo-claim-ref-key'), 'key'), 'base64');
    expect(key.length).toBe(32);
    expect(await bundleText()).toBe(caPem.trim());

    // a second pass, and another keeper's (a new leader), write nothing
    const before = await versions();
    await keeper().keepOnce();
    await keeper().keepOnce();
    expect(await versions()).toEqual(before);
  });

  it('signs its serving certificate again when due, when its names change, and when the CA changes, and follows with the caBundle', async () => {
    const first = await read('demo-apiserver-serving');
    // renewal is due once renewBefore reaches past the end
    await keeper({}, { renewBeforeMs: 91 * DAY }).keepOnce();
    const renewed = await read('demo-apiserver-serving');
    expect(renewed.metadata.resourceVersion).not.toBe(first.metadata.resourceVersion);
    expect(text(renewed, 'tls.crt')).not.toBe(text(first, 'tls.crt'));

    const names = [`demo-apiserver.${ns}.svc`, `demo-apiserver.${ns}.svc.cluster.local`];
    await keeper({ serving: [{ secret: 'demo-apiserver-serving', dnsNames: names }] }).keepOnce();
    expect(certFacts(text(await read('demo-apiserver-serving'), 'tls.crt'))?.dnsNames.sort()).toEqual(names.sort());

    // the CA Secret replaced (by hand): everything it signs follows
    // long-lived: one ending within caRenewBefore would start a rotation at once
    const ca = await createCA('replaced-by-hand', 3650);
    const current = await read('demo-ca');
    await secrets.replace(ns, 'demo-ca', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'demo-ca', namespace: ns, resourceVersion: current.metadata.resourceVersion, labels: current.metadata.labels },
      type: 'kubernetes.io/tls',
      data: { 'tls.crt': Buffer.from(ca.cert).toString('base64'), 'tls.key': Buffer.from(ca.key).toString('base64') },
    });
    await keeper().keepOnce();
    for (const s of objects().serving) {
      const serving = await read(s.secret);
      expect({ signed: certFacts(text(serving, 'tls.crt'))?.signedBy(ca.cert), ca: text(serving, 'ca.crt').trim() }).toEqual({
        signed: true,
        ca: ca.cert.trim(),
      });
    }
    expect(await bundleText()).toBe(ca.cert.trim());
  });

  it('comes back for a renewal when it is due, sooner than the resync', async () => {
    const next = await keeper({}, { renewBeforeMs: 89.5 * DAY, resyncMs: 7 * DAY }).keepOnce();
    expect(next).toBeGreaterThan(0);
    expect(next).toBeLessThanOrEqual(0.5 * DAY);
  });

  it('rotates the CA on request in three steps: trust both, sign with the new, drop the old; clients trust every server throughout', async () => {
    const certsIn = (bundle: string): string[] => bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
    const bundleOf = async (): Promise<string[]> => certsIn(Buffer.from((await caBundle()) ?? '', 'base64').toString('utf8'));
    const k = keeper();
    await k.keepOnce();
    const before = await read('demo-ca');
    const oldCa = text(before, 'tls.crt');
    const oldLeaf = text(await read('demo-apiserver-serving'), 'tls.crt');
    const annotate = async (value: string) => {
      const s = await read('demo-ca');
      await secrets.mergePatch(ns, 'demo-ca', {
        metadata: { annotations: { [ROTATE_CA_ANNOTATION]: value }, resourceVersion: s.metadata.resourceVersion },
      });
    };
    await annotate('first');

    // 1. both CAs trusted everywhere; the old still signs, so nothing served changes
    const wait1 = await k.keepOnce();
    expect(wait1).toBeLessThanOrEqual(TIMES.caRotationOverlapMs);
    const trusting = await read('demo-ca');
    const newCa = text(trusting, 'next.crt');
    expect({ signing: text(trusting, 'tls.crt'), phase: trusting.metadata.annotations?.['sandbox-scale.io/ca-rotation'] }).toEqual({
      signing: oldCa,
      phase: 'trusting-new',
    });
    expect((await bundleOf()).map((c) => c.trim())).toEqual([oldCa.trim(), newCa.trim()]);
    const serving1 = await read('demo-apiserver-serving');
    expect(text(serving1, 'tls.crt')).toBe(oldLeaf);
    expect(certsIn(text(serving1, 'ca.crt'))).toHaveLength(2);
    // a second pass within the overlap changes nothing
    const v1 = await versions();
    await k.keepOnce();
    expect(await versions()).toEqual(v1);

    // 2. after the overlap the new CA signs; the old is still trusted
    await eventually(async () => {
      await k.keepOnce();
      expect((await read('demo-ca')).metadata.annotations?.['sandbox-scale.io/ca-rotation']).toBe('dropping-old');
    });
    const dropping = await read('demo-ca');
    expect({ signing: text(dropping, 'tls.crt'), previous: text(dropping, 'previous.crt') }).toEqual({ signing: newCa, previous: oldCa });
    for (const s of objects().serving) {
      const serving = await read(s.secret);
      expect(certFacts(text(serving, 'tls.crt'))?.signedBy(newCa)).toBe(true);
      expect(certsIn(text(serving, 'ca.crt')).map((c) => c.trim())).toEqual([newCa.trim(), oldCa.trim()]);
    }

    // 3. then the old CA leaves every bundle
    await eventually(async () => {
      await k.keepOnce();
      expect((await read('demo-ca')).metadata.annotations?.['sandbox-scale.io/ca-rotation']).toBeUndefined();
    });
    const done = await read('demo-ca');
    expect({
      signing: text(done, 'tls.crt'),
      keys: Object.keys(done.data).sort(),
      handled: done.metadata.annotations?.['sandbox-scale.io/rotated-ca'],
    }).toEqual({
      signing: newCa,
      keys: ['tls.crt', 'tls.key'],
      handled: 'first',
    });
    expect((await bundleOf()).map((c) => c.trim())).toEqual([newCa.trim()]);
    expect(certsIn(text(await read('demo-fast-path-serving'), 'ca.crt')).map((c) => c.trim())).toEqual([newCa.trim()]);
    // the request was acted on once: another pass starts nothing
    await k.keepOnce();
    expect((await read('demo-ca')).metadata.annotations?.['sandbox-scale.io/ca-rotation']).toBeUndefined();
  });

  it('never writes a Secret it did not make, nor replaces a claim-reference key', async () => {
    const ca = await createCA('the-users-own', 1);
    const leaf = await signLeaf(ca, { commonName: 'elsewhere', dnsNames: ['elsewhere.example.com'], validDays: 1 });
    await secrets.create(ns, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'users-serving', namespace: ns },
      type: 'kubernetes.io/tls',
      data: { 'tls.crt': Buffer.from(leaf.cert).toString('base64'), 'tls.key': Buffer.from(leaf.key).toString('base64') },
    });
    await secrets.create(ns, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'users-key', namespace: ns },
      data: { key: 'dXNlcnMta2V5' },
    });
    const before = await Promise.all(['users-serving', 'users-key'].map(async (n) => (await read(n)).metadata.resourceVersion));
    await keeper({
      serving: [{ secret: 'users-serving', dnsNames: [`demo-apiserver.${ns}.svc`] }],
      claimRefKeySecret: 'users-key',
    }).keepOnce();
    expect(await Promise.all(['users-serving', 'users-key'].map(async (n) => (await read(n)).metadata.resourceVersion))).toEqual(before);
    expect(text(await read('users-key'), 'key')).toBe('users-key');
  });

  it('leaves a CA Secret without a usable key alone, and signs nothing with it', async () => {
    await secrets.create(ns, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'broken-ca', namespace: ns },
      type: 'Opaque',
      data: { 'tls.crt': Buffer.from('not a certificate').toString('base64') },
    });
    const log = captureLog();
    const k = new CertificateKeeper({
      kubeConfig: kc,
      objects: objects({ caSecret: 'broken-ca', serving: [{ secret: 'never-signed', dnsNames: ['x.example.com'] }], apiService: '' }),
      times: TIMES,
      manager: 'sandbox-scale/keeper-test',
      log: log.log,
      registry: new Registry(),
    });
    await k.keepOnce();
    await expect(secrets.get(ns, 'never-signed')).rejects.toMatchObject({ code: 404 });
    expect(log.lines.some((l) => String(l.msg).includes('no usable tls.crt and tls.key') && l.secret === 'broken-ca')).toBe(true);
  });

  it('acts on a rotation asked for while it runs at once, not at its next resync', async () => {
    const log = captureLog();
    const k = new CertificateKeeper({
      kubeConfig: kc,
      objects: objects(),
      times: TIMES,
      manager: 'sandbox-scale/keeper-test',
      log: log.log,
      registry: new Registry(),
    });
    await k.keepOnce();
    const stop = new AbortController();
    const running = k.start(stop.signal);
    try {
      const s = await read('demo-ca');
      await secrets.mergePatch(ns, 'demo-ca', { metadata: { annotations: { [ROTATE_CA_ANNOTATION]: 'while-running' } } });
      expect(s.metadata.annotations?.['sandbox-scale.io/rotated-ca']).not.toBe('while-running');
      // the resync is 10 minutes: only the watch of the CA Secret can start it this soon, and the loop ends it
      await eventually(
        async () => {
          const now = await read('demo-ca');
          expect(now.metadata.annotations?.['sandbox-scale.io/rotated-ca']).toBe('while-running');
          expect(now.metadata.annotations?.['sandbox-scale.io/ca-rotation']).toBeUndefined();
        },
        { timeoutMs: 30_000 },
      ).catch((err: unknown) => {
        // what the keeper said, when it did not get there
        process.stdout.write(`${log.lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
        throw err;
      });
    } finally {
      stop.abort();
      await running;
    }
  });

  it('rotates the claim-reference key on request: the new key verifies, then signs while the old verifies for the grace, then the old is gone', async () => {
    const k = keeper();
    await k.keepOnce();
    const ring = async (): Promise<OwnerRefKey> => OwnerRefKey.fromText(text(await read('demo-claim-ref-key'), 'key'));
    const phase = async (): Promise<string | undefined> =>
      (await read('demo-claim-ref-key')).metadata.annotations?.['sandbox-scale.io/key-rotation'];
    const owner: SandboxOwner = { kind: 'FastPathClaim', uid: '0b3e6f0c-2d7a-4a55-9c51-6a0f3f1d2e4b', namespace: 'team-a', name: 'f1' };
    const before = await ring();
    const oldRef = formatOwnerRef(owner, before);
    expect(before.ids).toHaveLength(1);

    await secrets.mergePatch(ns, 'demo-claim-ref-key', { metadata: { annotations: { [ROTATE_KEY_ANNOTATION]: 'r1' } } });
    // step 1: the new key joins last; what the ring signs is unchanged, and the keeper comes back at the overlap's end
    const wait1 = await k.keepOnce();
    expect(wait1).toBeLessThanOrEqual(TIMES.caRotationOverlapMs);
    const adding = await ring();
    expect(await phase()).toBe('adding');
    expect(adding.ids).toEqual([before.ids[0], expect.stringMatching(/^[0-9a-f]{12}$/)]);
    expect(formatOwnerRef(owner, adding)).toBe(oldRef);
    const newId = adding.ids[1];

    // step 2, after the overlap: the new key signs, the old still proves what it made
    await eventually(
      async () => {
        await k.keepOnce();
        expect(await phase()).toBe('signing');
      },
      { timeoutMs: 15_000, intervalMs: 250 },
    );
    const signing = await ring();
    expect(signing.ids).toEqual([newId, before.ids[0]]);
    const newRef = formatOwnerRef(owner, signing);
    expect(newRef).not.toBe(oldRef);
    expect(provenOwnerOf(oldRef, signing)).toBeDefined();

    // step 3, after the grace: the old key is gone, and with it the proof of what it made
    await eventually(
      async () => {
        await k.keepOnce();
        expect(await phase()).toBeUndefined();
      },
      { timeoutMs: 20_000, intervalMs: 250 },
    );
    const done = await ring();
    expect(done.ids).toEqual([newId]);
    expect(provenOwnerOf(newRef, done)).toBeDefined();
    expect(provenOwnerOf(oldRef, done)).toBeUndefined();
    const after = await read('demo-claim-ref-key');
    expect(after.metadata.annotations?.['sandbox-scale.io/rotated-key']).toBe('r1');
    // acted on once: another pass writes nothing
    await k.keepOnce();
    expect((await read('demo-claim-ref-key')).metadata.resourceVersion).toBe(after.metadata.resourceVersion);
  });

  it('acts on a key rotation asked for while it runs at once, and never rotates a keyring it did not make', async () => {
    const k = keeper();
    await k.keepOnce();
    const first = OwnerRefKey.fromText(text(await read('demo-claim-ref-key'), 'key')).ids[0];
    const stop = new AbortController();
    const running = k.start(stop.signal);
    try {
      await secrets.mergePatch(ns, 'demo-claim-ref-key', { metadata: { annotations: { [ROTATE_KEY_ANNOTATION]: 'while-running' } } });
      // the resync is 10 minutes: only the watch of the key Secret, then each step's own timer, get there this soon
      await eventually(
        async () => {
          const now = await read('demo-claim-ref-key');
          expect(now.metadata.annotations?.['sandbox-scale.io/rotated-key']).toBe('while-running');
          expect(now.metadata.annotations?.['sandbox-scale.io/key-rotation']).toBeUndefined();
          const ids = OwnerRefKey.fromText(text(now, 'key')).ids;
          expect(ids).toHaveLength(1);
          expect(ids[0]).not.toBe(first);
        },
        { timeoutMs: 30_000 },
      );
    } finally {
      stop.abort();
      await running;
    }
    // a keyring the user provides is theirs: a request on it changes nothing
    await secrets.create(ns, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'users-ring', namespace: ns, annotations: { [ROTATE_KEY_ANNOTATION]: 'please' } },
      data: { key: Buffer.from(`${Buffer.alloc(32, 7).toString('base64')}\n`).toString('base64') },
    });
    const rv = (await read('users-ring')).metadata.resourceVersion;
    await keeper({ claimRefKeySecret: 'users-ring' }).keepOnce();
    expect((await read('users-ring')).metadata.resourceVersion).toBe(rv);
  });

  it('runs until stopped, on the leader only', async () => {
    const k = keeper();
    expect(k.needLeaderElection).toBe(true);
    const stop = new AbortController();
    const running = k.start(stop.signal);
    stop.abort();
    await expect(running).resolves.toBeUndefined();
  });
});

import {
  CustomObjectsApi,
  RbacAuthorizationV1Api,
  CoreV1Api,
  Watch,
  type KubernetesObject,
  KubernetesObjectApi,
} from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  applyCrds,
  createTestNamespace,
  deleteNamespace,
  eventually,
  kubeconfigForServiceAccount,
  kubectl,
  runSuffix,
  runTool,
  startControlPlane,
  testKubeConfig,
  whoAmI,
} from '../src/index';

const kc = testKubeConfig();
let ns: string;
const group = `cp-${runSuffix()}.e2e.sandbox-scale.dev`;

beforeAll(async () => {
  ns = await createTestNamespace(kc, 'cp');
});
afterAll(async () => {
  await deleteNamespace(kc, ns);
});

describe('the local control plane', () => {
  it('answers /readyz through the real kubectl, and helm runs', async () => {
    const ready = await kubectl(['get', '--raw', '/readyz']);
    expect(ready).toMatchObject({ code: 0, stdout: 'ok' });
    const helm = await runTool('helm', ['version', '--short']);
    expect(helm.code).toBe(0);
    expect(helm.stdout).toMatch(/^v3\.\d+\.\d+/);
  });

  it('establishes a CRD, then creates, server-side-applies, watches and deletes a custom object', async () => {
    const plural = 'widgets';
    await applyCrds(kc, [
      {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: `${plural}.${group}` },
        spec: {
          group,
          scope: 'Namespaced',
          names: { plural, singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: {
                openAPIV3Schema: {
                  type: 'object',
                  properties: {
                    spec: { type: 'object', properties: { size: { type: 'integer', minimum: 0 }, color: { type: 'string' } } },
                  },
                },
              },
            },
          ],
        },
      },
    ]);

    const custom = kc.makeApiClient(CustomObjectsApi);
    // Established comes a moment before the new endpoint serves: wait until it lists.
    await eventually(() => custom.listNamespacedCustomObject({ group, version: 'v1', namespace: ns, plural }));
    const seen: string[] = [];
    let watchErr: unknown;
    const watch = new Watch(kc);
    const req = await watch.watch(
      `/apis/${group}/v1/namespaces/${ns}/${plural}`,
      {},
      (type: string, obj: KubernetesObject) => {
        seen.push(`${type}:${obj.metadata?.name}`);
      },
      (err: unknown) => {
        watchErr = err;
      },
    );
    await custom.createNamespacedCustomObject({
      group,
      version: 'v1',
      namespace: ns,
      plural,
      body: { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 1 } },
    });

    const objects = kc.makeApiClient(KubernetesObjectApi);
    const applied = await objects.patch(
      { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w1', namespace: ns }, spec: { color: 'blue' } } as KubernetesObject,
      undefined,
      undefined,
      'sandbox-scale/e2e-test',
      true,
      'application/apply-patch+yaml',
    );
    expect((applied as KubernetesObject & { spec: { color: string; size: number } }).spec).toEqual({ size: 1, color: 'blue' });
    expect(applied.metadata?.managedFields?.map((f) => f.manager)).toContain('sandbox-scale/e2e-test');

    await expect(
      custom.createNamespacedCustomObject({
        group,
        version: 'v1',
        namespace: ns,
        plural,
        body: { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w2' }, spec: { size: -1 } },
      }),
    ).rejects.toMatchObject({ code: 422 });

    await custom.deleteNamespacedCustomObject({ group, version: 'v1', namespace: ns, plural, name: 'w1' });
    await eventually(() => {
      expect(watchErr).toBeUndefined();
      expect(seen).toEqual(['ADDED:w1', 'MODIFIED:w1', 'DELETED:w1']);
    });
    req.abort();
  });

  it('gives a ServiceAccount 403 until a RoleBinding grants it, then 200', async () => {
    const sa = await kubeconfigForServiceAccount(kc, ns, 'reader');
    expect(await whoAmI(sa)).toBe(`system:serviceaccount:${ns}:reader`);
    const asSa = sa.makeApiClient(CoreV1Api);
    await expect(asSa.listNamespacedConfigMap({ namespace: ns })).rejects.toMatchObject({ code: 403 });

    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: ns,
      body: { metadata: { name: 'cm-reader' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }] },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: 'cm-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'cm-reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: ns }],
      },
    });
    await eventually(async () => {
      const list = await asSa.listNamespacedConfigMap({ namespace: ns });
      expect(Array.isArray(list.items)).toBe(true);
    });
    // still nothing beyond what the Role grants
    await expect(asSa.listNamespacedSecret({ namespace: ns })).rejects.toMatchObject({ code: 403 });
  });

  it('garbage-collects dependents, as a cluster with a controller manager does', async () => {
    const core = kc.makeApiClient(CoreV1Api);
    const owner = await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'owner' } } });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: {
        metadata: {
          name: 'dependent',
          ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata?.uid as string }],
        },
      },
    });
    await core.deleteNamespacedConfigMap({ namespace: ns, name: 'owner' });
    await eventually(
      async () => {
        await expect(core.readNamespacedConfigMap({ namespace: ns, name: 'dependent' })).rejects.toMatchObject({ code: 404 });
      },
      { timeoutMs: 60_000 },
    );
  });

  it('stops a second control plane without leaving a process or a directory behind', async () => {
    const cp = await startControlPlane({ controllerManager: false });
    const pids = (await import('node:fs')).readFileSync(`${cp.dir}/pids`, 'utf8').trim().split('\n').map(Number);
    expect(pids.length).toBe(2);
    const r = await kubectl(['get', '--raw', '/readyz'], { kubeconfig: cp.kubeconfigPath });
    expect(r.stdout).toBe('ok');
    await cp.stop();
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
    expect(existsSync(cp.dir)).toBe(false);
  });

  it('leaves nothing behind when its owner is SIGKILLed', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'fixtures/start-and-wait.ts')], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const info = await new Promise<{ dir: string; pids: number[] }>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0] as string) as { dir: string; pids: number[] });
      });
      child.once('exit', (code) => reject(new Error(`fixture exited early with ${code}`)));
    });
    expect(info.pids.length).toBe(2);
    child.kill('SIGKILL');
    await eventually(
      () => {
        for (const pid of info.pids) expect(() => process.kill(pid, 0)).toThrow();
        expect(existsSync(info.dir)).toBe(false);
      },
      { timeoutMs: 20_000 },
    );
  });
});

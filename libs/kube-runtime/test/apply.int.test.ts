import { createTestNamespace, deleteNamespace, testKubeConfig } from '@sandbox-scale/e2e';
import {
  ConfigMapResource,
  KubeObjectSchema,
  ResourceClient,
  applyObject,
  applyStatus,
  ignoreNotFound,
  isAlreadyExists,
  isConflict,
  isNotFound,
} from '../src/index';
import { GizmoResource, GizmoSchema, installTestCrds } from './kube-fixtures';

const kc = testKubeConfig();
let ns: string;
const fieldManager = 'sandbox-scale/kube-runtime-test';

beforeAll(async () => {
  ns = await createTestNamespace(kc, 'kr-apply');
  await installTestCrds(kc);
});
afterAll(async () => {
  await deleteNamespace(kc, ns);
});

const rvOf = (o: unknown): string | undefined => KubeObjectSchema.parse(o).metadata.resourceVersion;

describe('server-side apply helper', () => {
  it('creates, then an identical apply writes nothing (resourceVersion unchanged), a change writes', async () => {
    const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa', namespace: ns }, data: { a: '1' } };
    const first = await applyObject(kc, body, { fieldManager });
    const again = await applyObject(kc, body, { fieldManager });
    expect(rvOf(again)).toBe(rvOf(first));
    const changed = await applyObject(kc, { ...body, data: { a: '2' } }, { fieldManager });
    expect(rvOf(changed)).not.toBe(rvOf(first));
    const managers = KubeObjectSchema.parse(changed).metadata.managedFields;
    expect(JSON.stringify(managers)).toContain(fieldManager);
  });

  it('applies status through the status subresource without touching spec', async () => {
    const gizmo = { apiVersion: `${GizmoResource.group}/v1`, kind: 'Gizmo', metadata: { name: 'g', namespace: ns }, spec: { size: 2 } };
    await applyObject(kc, gizmo, { fieldManager, resource: GizmoResource });
    const withStatus = GizmoSchema.parse(
      await applyStatus(
        kc,
        { apiVersion: gizmo.apiVersion, kind: 'Gizmo', metadata: gizmo.metadata, status: { phase: 'Ready' } },
        { fieldManager: `${fieldManager}-status`, resource: GizmoResource },
      ),
    );
    expect(withStatus.status?.phase).toBe('Ready');
    expect(withStatus.spec.size).toBe(2);
    // Status in the main resource is ignored for a CRD with a status subresource.
    const ignored = GizmoSchema.parse(
      await applyObject(kc, { ...gizmo, status: { phase: 'Bogus' } }, { fieldManager, resource: GizmoResource }),
    );
    expect(ignored.status?.phase).toBe('Ready');
  });

  it('resolves the resource by discovery and parses the reply when asked', async () => {
    const out = await applyObject(
      kc,
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'parsed', namespace: ns } },
      { fieldManager, parse: (o) => KubeObjectSchema.parse(o) },
    );
    expect(out.metadata.name).toBe('parsed');
  });

  it('reports a field owned by another manager as a conflict unless forced', async () => {
    const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'owned', namespace: ns }, data: { k: 'mine' } };
    await applyObject(kc, body, { fieldManager: 'owner-a' });
    const err = await applyObject(kc, { ...body, data: { k: 'theirs' } }, { fieldManager: 'owner-b' }).catch((e: unknown) => e);
    expect(isConflict(err)).toBe(true);
    expect(isAlreadyExists(err)).toBe(false);
    await expect(applyObject(kc, { ...body, data: { k: 'theirs' } }, { fieldManager: 'owner-b', force: true })).resolves.toBeDefined();
  });

  it('maps API errors to the predicates', async () => {
    const cms = new ResourceClient(kc, ConfigMapResource);
    const missing = await cms.get(ns, 'nope').catch((e: unknown) => e);
    expect(isNotFound(missing)).toBe(true);
    await expect(ignoreNotFound(cms.get(ns, 'nope'))).resolves.toBeUndefined();
    await cms.create(ns, { metadata: { name: 'dup' } });
    expect(isAlreadyExists(await cms.create(ns, { metadata: { name: 'dup' } }).catch((e: unknown) => e))).toBe(true);
    const stale = { metadata: { name: 'dup', namespace: ns, resourceVersion: '1' }, data: { x: 'y' } };
    expect(isConflict(await cms.replace(ns, 'dup', stale).catch((e: unknown) => e))).toBe(true);
  });
});

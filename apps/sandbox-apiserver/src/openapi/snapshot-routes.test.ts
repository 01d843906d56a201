import { apiGroupDiscoveryList, apiResourceList } from '../discovery';
import { buildModels, MODEL_PREFIX } from './models';
import { openApiV3 } from './openapi';

type Op = { operationId: string; requestBody?: { content: Record<string, { schema: { $ref: string } }> } };

describe('snapshot subresources in discovery and OpenAPI', () => {
  it('advertises each with verb create (the snapshots list get too) and its response kind, in legacy and aggregated discovery', () => {
    const legacy = (apiResourceList() as { resources: { name: string; kind: string; verbs: string[] }[] }).resources;
    expect(legacy.filter((r) => /snapshot/.test(r.name))).toEqual([
      expect.objectContaining({ name: 'sandboxes/snapshot', kind: 'SandboxSnapshotResult', verbs: ['create'] }),
      expect.objectContaining({ name: 'sandboxes/snapshots', kind: 'SandboxSnapshotList', verbs: ['create', 'get'] }),
      expect.objectContaining({ name: 'sandboxes/deletesnapshot', kind: 'SandboxDeleteSnapshotResult', verbs: ['create'] }),
      expect.objectContaining({ name: 'sandboxes/claimsnapshot', kind: 'Sandbox', verbs: ['create'] }),
    ]);
    const v2 = JSON.stringify(apiGroupDiscoveryList('v2'));
    for (const sub of ['snapshots', 'deletesnapshot', 'claimsnapshot']) expect(v2).toContain(`"subresource":"${sub}"`);
  });

  it('documents the option bodies, keeps operation ids unique and the Sandbox model whole', () => {
    const doc = openApiV3() as { paths: Record<string, Record<string, Op>> };
    const ids = Object.values(doc.paths).flatMap((p) =>
      Object.values(p)
        .filter((o): o is Op => typeof o === 'object' && o !== null && 'operationId' in o)
        .map((o) => o.operationId),
    );
    expect(new Set(ids).size).toBe(ids.length);
    const claim = doc.paths['/apis/agents.x-k8s.io/v1beta1/namespaces/{namespace}/sandboxes/{name}/claimsnapshot']?.post;
    expect(claim?.requestBody?.content['application/json']?.schema.$ref).toBe(
      `#/components/schemas/${MODEL_PREFIX}SandboxClaimSnapshotOptions`,
    );
    const models = buildModels('#/components/schemas/', true);
    expect(models[`${MODEL_PREFIX}SandboxClaimSnapshotOptions`]).toMatchObject({ required: ['snapshot', 'name'] });
    expect(JSON.stringify(models[`${MODEL_PREFIX}Sandbox`])).toContain('podTemplate');
  });
});

type PathItem = Record<string, { operationId?: string; 'x-kubernetes-action'?: string; responses?: Record<string, unknown> }>;

describe('the read subresources, stats and snapshots', () => {
  const subs = (doc: Record<string, unknown>): { subresource: string; verbs: string[] }[] =>
    (doc as { items: { versions: { resources: { subresources: { subresource: string; verbs: string[] }[] }[] }[] }[] }).items[0]!
      .versions[0]!.resources[0]!.subresources;

  it('are advertised with get beside create, and every other action with create only', () => {
    const legacy = (apiResourceList() as { resources: { name: string; verbs: string[] }[] }).resources;
    const verbs = Object.fromEntries(legacy.filter((r) => r.name.startsWith('sandboxes/')).map((r) => [r.name, r.verbs]));
    expect(verbs['sandboxes/stats']).toEqual(['create', 'get']);
    expect(verbs['sandboxes/snapshots']).toEqual(['create', 'get']);
    for (const action of ['pause', 'resume', 'fork', 'snapshot', 'deletesnapshot', 'claimsnapshot', 'promote'])
      expect(verbs[`sandboxes/${action}`]).toEqual(['create']);
    for (const version of ['v2', 'v2beta1'] as const) {
      const v = Object.fromEntries(subs(apiGroupDiscoveryList(version)).map((s) => [s.subresource, s.verbs]));
      expect({ stats: v['stats'], snapshots: v['snapshots'], pause: v['pause'] }).toEqual({
        stats: ['create', 'get'],
        snapshots: ['create', 'get'],
        pause: ['create'],
      });
    }
  });

  it('have a get operation (200) beside post (201) in OpenAPI v3; the other actions post only', () => {
    const paths = (openApiV3() as { paths: Record<string, PathItem> }).paths;
    const at = (sub: string): PathItem => paths[`/apis/agents.x-k8s.io/v1beta1/namespaces/{namespace}/sandboxes/{name}/${sub}`] ?? {};
    for (const [sub, kind] of [
      ['stats', 'SandboxStats'],
      ['snapshots', 'SandboxSnapshotList'],
    ] as const) {
      expect(at(sub).get).toMatchObject({ operationId: `get${kind}`, 'x-kubernetes-action': 'get' });
      expect(Object.keys(at(sub).get?.responses ?? {})).toEqual(['200']);
      expect(at(sub).post).toMatchObject({ operationId: `post${kind}`, 'x-kubernetes-action': 'post' });
      expect(Object.keys(at(sub).post?.responses ?? {})).toEqual(['201']);
    }
    for (const sub of ['pause', 'fork', 'deletesnapshot', 'claimsnapshot']) {
      expect(at(sub).get).toBeUndefined();
      expect(at(sub).post).toBeDefined();
    }
  });
});

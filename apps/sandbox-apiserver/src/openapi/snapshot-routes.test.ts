import { apiGroupDiscoveryList, apiResourceList } from '../discovery';
import { buildModels, MODEL_PREFIX } from './models';
import { openApiV3 } from './openapi';

type Op = { operationId: string; requestBody?: { content: Record<string, { schema: { $ref: string } }> } };

describe('snapshot subresources in discovery and OpenAPI', () => {
  it('advertises each with verb create and its response kind, in legacy and aggregated discovery', () => {
    const legacy = (apiResourceList() as { resources: { name: string; kind: string; verbs: string[] }[] }).resources;
    expect(legacy.filter((r) => /snapshot/.test(r.name))).toEqual([
      expect.objectContaining({ name: 'sandboxes/snapshot', kind: 'SandboxSnapshotResult', verbs: ['create'] }),
      expect.objectContaining({ name: 'sandboxes/snapshots', kind: 'SandboxSnapshotList', verbs: ['create'] }),
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

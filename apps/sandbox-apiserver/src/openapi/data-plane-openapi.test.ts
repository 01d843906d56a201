import { apiGroupDiscoveryList, apiResourceList } from '../discovery';
import { buildModels, MODEL_PREFIX } from './models';
import { openApiV2, openApiV3 } from './openapi';

const SB = '/apis/agents.x-k8s.io/v1beta1/namespaces/{namespace}/sandboxes/{name}';

describe('the data-plane subresources in discovery and OpenAPI', () => {
  it('advertises exec, files and portforward with every verb a request of each is authorized by', () => {
    const legacy = (apiResourceList() as { resources: { name: string; kind: string; verbs: string[] }[] }).resources;
    expect(legacy.filter((r) => /exec|files|portforward/.test(r.name))).toEqual([
      expect.objectContaining({ name: 'sandboxes/exec', kind: 'SandboxExecResult', verbs: ['create'] }),
      expect.objectContaining({ name: 'sandboxes/files', kind: 'SandboxFileInfo', verbs: ['create', 'delete', 'get', 'update'] }),
      expect.objectContaining({ name: 'sandboxes/portforward', kind: 'SandboxPortForwardOptions', verbs: ['create', 'get'] }),
    ]);
    const v2 = apiGroupDiscoveryList('v2') as {
      items: { versions: { resources: { subresources: { subresource: string; verbs: string[] }[] }[] }[] }[];
    };
    const subs = v2.items[0]?.versions[0]?.resources[0]?.subresources ?? [];
    expect(subs.find((s) => s.subresource === 'files')?.verbs).toEqual(['create', 'delete', 'get', 'update']);
    // the lifecycle actions stay POST only
    expect(subs.find((s) => s.subresource === 'pause')?.verbs).toEqual(['create']);
  });

  it('documents the paths, their parameters and bodies, and the models of v2 and v3', () => {
    const doc = openApiV3() as {
      paths: Record<string, Record<string, { parameters?: { name: string; required?: boolean }[]; requestBody?: unknown }>>;
    };
    expect(Object.keys(doc.paths[`${SB}/exec`] ?? {})).toEqual(['parameters', 'post']);
    expect(Object.keys(doc.paths[`${SB}/files`] ?? {})).toEqual(['parameters', 'get', 'put', 'delete']);
    expect(Object.keys(doc.paths[`${SB}/portforward`] ?? {})).toEqual(['parameters', 'get', 'post']);
    expect(doc.paths[`${SB}/files`]?.get?.parameters).toContainEqual(expect.objectContaining({ name: 'path', required: true }));
    expect(JSON.stringify(doc.paths[`${SB}/exec`]?.post?.requestBody)).toContain(`${MODEL_PREFIX}SandboxExecOptions`);
    for (const models of [
      buildModels('#/components/schemas/', true),
      (openApiV2() as { definitions: Record<string, unknown> }).definitions,
    ])
      for (const kind of ['SandboxExecOptions', 'SandboxExecResult', 'SandboxFileList', 'SandboxFileInfo', 'SandboxPortForwardOptions'])
        expect(models[`${MODEL_PREFIX}${kind}`]).toMatchObject({
          type: 'object',
          'x-kubernetes-group-version-kind': [{ group: 'agents.x-k8s.io', version: 'v1beta1', kind }],
        });
    expect(buildModels('#/definitions/', false)[`${MODEL_PREFIX}SandboxExecOptions`]).toMatchObject({ required: ['argv'] });
  });
});

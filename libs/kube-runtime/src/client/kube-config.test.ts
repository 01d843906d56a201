import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isKubeConfigError, loadKubeConfig } from './kube-config';
import { resourcePath } from './resource';

const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://127.0.0.1:6443" } }]
users: [{ name: u, user: { token: t } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;

describe('loadKubeConfig', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kc-'));
  const file = join(dir, 'config');
  writeFileSync(file, kubeconfig);

  it('loads the file given', () => {
    expect(loadKubeConfig(file, {}).getCurrentCluster()?.server).toBe('https://127.0.0.1:6443');
  });
  it('falls back to the first $KUBECONFIG entry', () => {
    expect(loadKubeConfig(undefined, { KUBECONFIG: `${file}:/nonexistent` }).getCurrentCluster()?.name).toBe('c');
  });
  it('refuses when there is no file and no cluster, naming what is missing', () => {
    let err: unknown;
    try {
      loadKubeConfig(undefined, {});
    } catch (e) {
      err = e;
    }
    expect(isKubeConfigError(err)).toBe(true);
    expect((err as Error).message).toMatch(/--kubeconfig/);
  });
  it('wraps an unreadable file', () => {
    expect(() => loadKubeConfig(join(dir, 'missing'), {})).toThrow(/cannot load kubeconfig/);
  });
});

describe('resourcePath', () => {
  it('builds core, group, namespaced, cluster-scoped and subresource paths', () => {
    const pools = { group: 'agents.x-k8s.io', version: 'v1alpha1', plural: 'sandboxwarmpools', kind: 'SandboxWarmPool', namespaced: true };
    expect(resourcePath({ group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', namespaced: true }, { namespace: 'a' })).toBe(
      '/api/v1/namespaces/a/configmaps',
    );
    expect(resourcePath(pools)).toBe('/apis/agents.x-k8s.io/v1alpha1/sandboxwarmpools');
    expect(resourcePath(pools, { namespace: 'n', name: 'p', subresource: 'status' })).toBe(
      '/apis/agents.x-k8s.io/v1alpha1/namespaces/n/sandboxwarmpools/p/status',
    );
    expect(resourcePath({ ...pools, namespaced: false }, { namespace: 'ignored', name: 'x' })).toBe(
      '/apis/agents.x-k8s.io/v1alpha1/sandboxwarmpools/x',
    );
  });
});

import type { KubeConfig } from '@kubernetes/client-node';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../system/app-process';
import { kubeconfigForServiceAccount, kubeconfigText, runTool } from './cluster';

export type ChartApp = 'claim-controller' | 'warmpool-driver' | 'inventory-publisher' | 'sandbox-apiserver';

export interface ChartAppIdentity {
  /** A kubeconfig with exactly the permissions the chart grants the app's ServiceAccount. */
  kubeConfig: KubeConfig;
  /** `system:serviceaccount:<namespace>:<name>`. */
  username: string;
  /** Deletes the ServiceAccount and the RBAC objects installed for it. */
  remove(): Promise<void>;
}

/**
 * Installs the chart's ServiceAccount and RBAC of one app (rendered by `helm template` from
 * charts/sandbox-scale, with the admission policy that narrows it, nothing else of the chart) under `release` in `namespace`, so an
 * in-process app in a test runs with the permissions it has when deployed, never as admin.
 * The release name keeps the cluster-scoped objects of parallel suites apart.
 */
export async function installChartAppRbac(
  kc: KubeConfig,
  app: ChartApp,
  opts: { release: string; namespace: string; set?: string[] },
): Promise<ChartAppIdentity> {
  const args = [
    'template',
    opts.release,
    join(REPO_ROOT, 'charts/sandbox-scale'),
    '--namespace',
    opts.namespace,
    '--show-only',
    'templates/serviceaccounts.yaml',
    '--show-only',
    `templates/rbac-${app}.yaml`,
    // the admission policy that confines claim-controller's Secret writes is part of what it may do
    ...(app === 'claim-controller' ? ['--show-only', 'templates/claim-controller-secret-policy.yaml'] : []),
    '--set',
    'workloads=false',
    ...(opts.set ?? []).flatMap((s) => ['--set', s]),
  ];
  const rendered = await runTool('helm', args);
  if (rendered.code !== 0) throw new Error(`helm template: ${rendered.stderr}`);
  // kubectl talks to the cluster of `kc`, which need not be the run's shared one
  const dir = mkdtempSync(join(tmpdir(), 'chart-rbac-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, kubeconfigText(kc), { mode: 0o600 });
  const env = { KUBECONFIG: kubeconfig };
  const applied = await runTool('kubectl', ['apply', '-f', '-'], env, rendered.stdout);
  if (applied.code !== 0) throw new Error(`kubectl apply of the chart RBAC of ${app}: ${applied.stderr}`);
  const fullname = opts.release.includes('sandbox-scale') ? opts.release : `${opts.release}-sandbox-scale`;
  const sa = `${fullname}-${app}`.slice(0, 63).replace(/-+$/, '');
  return {
    kubeConfig: await kubeconfigForServiceAccount(kc, opts.namespace, sa),
    username: `system:serviceaccount:${opts.namespace}:${sa}`,
    remove: async () => {
      await runTool('kubectl', ['delete', '--ignore-not-found', '--wait=false', '-f', '-'], env, rendered.stdout);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

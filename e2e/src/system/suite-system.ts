import { CustomObjectsApi } from '@kubernetes/client-node';
import { kubeApiClient } from '@sandbox-scale/kube-runtime';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { auditArgs } from '../control-plane/audit';
import { startControlPlane, type ControlPlane } from '../control-plane/control-plane';
import { connectInstalled } from '../installed/installed-target';
import { kubectlOk } from '../testing/cluster';
import { eventually } from '../testing/eventually';
import { chartServiceAccountUsers } from '../testing/audit-log';
import { RELEASE, startLocalSystem, SYSTEM_NAMESPACE, type LocalSystemOptions } from './local-system';
import { ensureNamespace, localTarget } from './local-target';
import { e2eTarget, type SystemUnderTest } from './system-under-test';

export interface SuiteSystemOptions {
  /** Namespaces the suite works in, created before anything else runs. */
  namespaces?: string[];
  /**
   * kube-apiserver writes an audit log (local: a control plane of the suite's own): the
   * SubjectAccessReviews it serves, with their bodies, and every request of the chart's
   * ServiceAccounts at level Metadata.
   */
  auditLog?: boolean;
  /**
   * How the local system runs for this suite. The installed chart runs one node, two replicas of
   * every Deployment and the values of installed-values.ts for every suite; these apply locally only.
   */
  local?: Omit<LocalSystemOptions, 'beforeInstall' | 'controlPlane' | 'log'>;
}

/**
 * The system a suite runs against, from the target of the run: a local system of its own
 * (every suite's beforeAll used to start one by hand), or the chart the installed run installed.
 */
export async function startSuiteSystem(opts: SuiteSystemOptions = {}): Promise<SystemUnderTest> {
  if (e2eTarget() === 'installed') {
    const sys = await connectInstalled();
    for (const ns of opts.namespaces ?? []) await sys.createNamespace(ns);
    if (opts.auditLog && sys.auditLogPath === undefined) throw new Error('the installed control plane writes no audit log');
    return sys;
  }
  let cp: ControlPlane | undefined;
  let auditDir: string | undefined;
  let auditLogPath: string | undefined;
  if (opts.auditLog) {
    auditDir = mkdtempSync(join(tmpdir(), 'sandbox-scale-audit-'));
    const audit = auditArgs(auditDir, {
      subjectAccessReviews: true,
      users: [...chartServiceAccountUsers(SYSTEM_NAMESPACE, RELEASE).values()],
    });
    auditLogPath = audit.logPath;
    // the audit log is the control plane's: a suite reading it needs one of its own
    cp = await startControlPlane({ apiserverArgs: audit.args });
  }
  try {
    const local = await startLocalSystem({
      examples: false,
      ...opts.local,
      ...(cp ? { controlPlane: cp } : {}),
      beforeInstall: async (kc) => {
        for (const ns of opts.namespaces ?? []) await ensureNamespace({ kubeConfig: kc }, ns);
      },
    });
    return localTarget(local, {
      auditLogPath,
      onStop: async () => {
        await cp?.stop();
        if (auditDir) rmSync(auditDir, { recursive: true, force: true });
      },
    });
  } catch (err) {
    await cp?.stop();
    if (auditDir) rmSync(auditDir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * `it` where the target has what a test needs; elsewhere the test is skipped, and its name and a
 * line on stderr say which capability is missing.
 */
export function itWhere(available: boolean, missing: string): jest.It {
  if (available) return it;
  const skip = ((name: string, fn?: jest.ProvidesCallback, timeout?: number) => {
    process.stderr.write(`[${e2eTarget()}] skipped "${name}": ${missing}\n`);
    it.skip(`${name} [skipped on the ${e2eTarget()} target: ${missing}]`, fn, timeout);
  }) as jest.It;
  return skip;
}

/** Tests that need several sandboxd nodes (the installed chart runs on one). */
export function itWithNodes(count: number): jest.It {
  const installed = e2eTarget() === 'installed';
  return itWhere(!installed, `needs ${count} sandboxd nodes; the installed cluster has one real node`);
}

const EXT = { group: 'extensions.agents.x-k8s.io', version: 'v1beta1' };

export interface WarmPoolSpec {
  name?: string;
  image: string;
  replicas: number;
  /** The pool's spec.coldStart (e.g. WhenNoWarmCapacity). */
  coldStart?: string;
}

/** A SandboxTemplate and its SandboxWarmPool of one container (1 CPU, 1 GiB), created or replaced. */
export async function applyWarmPool(sys: Pick<SystemUnderTest, 'kubeConfig'>, namespace: string, spec: WarmPoolSpec): Promise<void> {
  const name = spec.name ?? 'agent';
  const custom = kubeApiClient(sys.kubeConfig, CustomObjectsApi);
  const container = { name: 'agent', image: spec.image, resources: { requests: { cpu: '1', memory: '1Gi' } } };
  const objects = [
    {
      plural: 'sandboxtemplates',
      body: {
        apiVersion: `${EXT.group}/${EXT.version}`,
        kind: 'SandboxTemplate',
        metadata: { name, namespace },
        spec: { podTemplate: { spec: { containers: [container] } } },
      },
    },
    {
      plural: 'sandboxwarmpools',
      body: {
        apiVersion: `${EXT.group}/${EXT.version}`,
        kind: 'SandboxWarmPool',
        metadata: { name, namespace },
        spec: { replicas: spec.replicas, sandboxTemplateRef: { name }, ...(spec.coldStart ? { coldStart: spec.coldStart } : {}) },
      },
    },
  ];
  for (const o of objects) await custom.createNamespacedCustomObject({ ...EXT, namespace, plural: o.plural, body: o.body });
}

/** A SandboxClaim of the namespace's warm pool (default `agent`), applied and waited on until Ready. */
export async function claimReady(
  sys: Pick<SystemUnderTest, 'kubeconfigPath'>,
  namespace: string,
  name: string,
  pool = 'agent',
): Promise<void> {
  await kubectlOk(['apply', '-f', '-'], {
    kubeconfig: sys.kubeconfigPath,
    input: JSON.stringify({
      apiVersion: `${EXT.group}/${EXT.version}`,
      kind: 'SandboxClaim',
      metadata: { name, namespace },
      spec: { warmPoolRef: { name: pool } },
    }),
  });
  await kubectlOk(['-n', namespace, 'wait', '--for=condition=Ready', `sandboxclaim/${name}`, '--timeout=120s'], {
    kubeconfig: sys.kubeconfigPath,
  });
}

/** Waits until the pool reports `replicas` ready (at least, with `atLeast`). */
export async function waitPoolReady(
  sys: Pick<SystemUnderTest, 'kubeConfig'>,
  namespace: string,
  replicas: number,
  opts: { name?: string; timeoutMs?: number; atLeast?: boolean } = {},
): Promise<void> {
  const custom = kubeApiClient(sys.kubeConfig, CustomObjectsApi);
  await eventually(
    async () => {
      const pool = (await custom.getNamespacedCustomObject({
        ...EXT,
        namespace,
        plural: 'sandboxwarmpools',
        name: opts.name ?? 'agent',
      })) as { status?: { readyReplicas?: number } };
      const ready = pool.status?.readyReplicas ?? 0;
      if (opts.atLeast ? ready < replicas : ready !== replicas)
        throw new Error(`pool ${namespace}/${opts.name ?? 'agent'} ready ${ready}/${replicas}`);
    },
    { timeoutMs: opts.timeoutMs ?? 120_000, intervalMs: 500 },
  );
}

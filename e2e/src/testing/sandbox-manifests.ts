/** A Sandbox of one agent container of `image` (1 CPU, 1 GiB), as a user creates it through the aggregated API. */
export function sandboxManifest(name: string, image: string, namespace?: string): Record<string, unknown> {
  return {
    apiVersion: 'agents.x-k8s.io/v1beta1',
    kind: 'Sandbox',
    metadata: namespace === undefined ? { name } : { name, namespace },
    spec: {
      podTemplate: { spec: { containers: [{ name: 'agent', image, resources: { requests: { cpu: '1', memory: '1Gi' } } }] } },
    },
  };
}

/**
 * What a user applies with kubectl to get sandboxes: a SandboxTemplate and a SandboxWarmPool, both
 * named `agent`, and SandboxClaims of that pool, as one List for `kubectl apply -f -`.
 */
export interface WarmPoolListSpec {
  image: string;
  replicas: number;
  claims?: string[];
  /** Resource requests of the agent container; none when omitted. */
  requests?: { cpu: string; memory: string };
}

export function warmPoolList(namespace: string, spec: WarmPoolListSpec): string {
  const container = { name: 'agent', image: spec.image, ...(spec.requests ? { resources: { requests: spec.requests } } : {}) };
  const template = {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxTemplate',
    metadata: { name: 'agent', namespace },
    spec: { podTemplate: { spec: { containers: [container] } } },
  };
  const pool = {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxWarmPool',
    metadata: { name: 'agent', namespace },
    spec: { replicas: spec.replicas, sandboxTemplateRef: { name: 'agent' } },
  };
  const claims = (spec.claims ?? []).map((name) => ({
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxClaim',
    metadata: { name, namespace },
    spec: { warmPoolRef: { name: 'agent' } },
  }));
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [template, pool, ...claims] });
}

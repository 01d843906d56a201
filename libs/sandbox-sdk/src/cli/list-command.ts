import { ANNOTATIONS, EXTENSIONS_API_VERSION, labelSelectorMatches, parseLabelSelector } from '@sandbox-scale/scale-core';
import { boundSandboxOf, claimPhase, conditionOf, type ClaimObject } from '../claim-status';
import type { SandboxClient } from '../client';
import type { SandboxObject } from '../listing';
import type { Invocation } from './args';
import { age, CLAIM_RESOURCE, SANDBOX_RESOURCE, type Printable } from './output';

const key = (namespace: string | undefined, name: string): string => `${namespace ?? ''}/${name}`;

/** Both lists at once; a refusal of the claims is reported first, as the command is about them as much. */
async function readBoth(c: SandboxClient, inv: Invocation, ns: string): Promise<{ sandboxes: SandboxObject[]; claims: ClaimObject[] }> {
  const scope = { namespace: ns, allNamespaces: inv.allNamespaces, ...(inv.timeoutMs !== undefined ? { timeoutMs: inv.timeoutMs } : {}) };
  const [claims, sandboxes] = await Promise.allSettled([
    c.listClaims(scope),
    c.listSandboxes({ ...scope, ...(inv.labelSelector ? { labelSelector: inv.labelSelector } : {}) }),
  ]);
  if (claims.status === 'rejected') throw claims.reason;
  if (sandboxes.status === 'rejected') throw sandboxes.reason;
  return { sandboxes: sandboxes.value, claims: claims.value };
}

/**
 * `kubectl sandbox list`: every sandbox the API serves in the namespace, those a claim holds
 * (with its pool) and those made without one, then the claims not bound yet. -l selects by
 * label: the sandboxes' on the server, the unbound claims' here.
 */
export async function listing(c: SandboxClient, inv: Invocation, ns: string): Promise<Printable> {
  const { sandboxes, claims } = await readBoth(c, inv, ns);
  return listPrintable(inv, ns, sandboxes, claims);
}

/** The rows of list from what was read: pure, so the join is tested without a cluster. */
export function listPrintable(
  inv: Pick<Invocation, 'allNamespaces' | 'labelSelector'>,
  ns: string,
  sandboxes: readonly SandboxObject[],
  claims: readonly ClaimObject[],
): Printable {
  const selector = inv.labelSelector ? parseLabelSelector(inv.labelSelector) : undefined;
  const claimOf = new Map<string, ClaimObject>();
  for (const cl of claims) {
    const bound = boundSandboxOf(cl);
    if (bound?.name) claimOf.set(key(cl.metadata.namespace, bound.name), cl);
  }
  const served = new Set(sandboxes.map((s) => key(s.metadata.namespace, s.metadata.name)));
  // a claim whose sandbox is not served (yet, or under -l not selected) is a row of its own only
  // while it is unbound: a bound one's row is its sandbox's
  const unbound = claims.filter((cl) => {
    const bound = boundSandboxOf(cl);
    if (bound?.name && (served.has(key(cl.metadata.namespace, bound.name)) || selector !== undefined)) return false;
    return selector === undefined || labelSelectorMatches(selector, cl.metadata.labels);
  });

  const rows: { ns: string; cells: string[]; wide: string[]; name: string; object: unknown }[] = [];
  for (const s of sandboxes) {
    const cl = claimOf.get(key(s.metadata.namespace, s.metadata.name));
    const ready = s.status?.conditions?.find((x) => x.type === 'Ready');
    rows.push({
      ns: s.metadata.namespace ?? ns,
      name: `${SANDBOX_RESOURCE}/${s.metadata.name}`,
      object: s,
      cells: [
        s.metadata.name,
        cl?.spec?.warmPoolRef?.name ?? '<none>',
        ready?.status ?? 'Unknown',
        ready?.reason ?? '',
        cl?.metadata.name ?? '<none>',
        s.status?.nodeName || '<none>',
        age(s.metadata.creationTimestamp),
      ],
      wide: [s.status?.podIPs?.[0] ?? '<none>', s.metadata.annotations?.[ANNOTATIONS.claimId] ?? ''],
    });
  }
  for (const cl of unbound) {
    const p = claimPhase(cl);
    const b = boundSandboxOf(cl);
    const cond = conditionOf(cl, 'Ready') ?? conditionOf(cl, 'Bound');
    rows.push({
      ns: cl.metadata.namespace ?? ns,
      name: `${CLAIM_RESOURCE}/${cl.metadata.name}`,
      object: { apiVersion: EXTENSIONS_API_VERSION, kind: 'SandboxClaim', ...cl },
      cells: [
        cl.metadata.name,
        cl.spec?.warmPoolRef?.name ?? '<none>',
        p.state === 'ready' ? 'True' : (cond?.status ?? 'False'),
        p.state === 'ready' ? '' : p.reason,
        cl.metadata.name,
        b?.node || '<none>',
        age(cl.metadata.creationTimestamp),
      ],
      wide: [b?.address || '<none>', b?.claimId ?? ''],
    });
  }
  const withNs = (r: { ns: string; cells: string[] }): string[] => (inv.allNamespaces ? [r.ns, ...r.cells] : r.cells);
  const headers = ['NAME', 'POOL', 'READY', 'REASON', 'CLAIM', 'NODE', 'AGE'];
  return {
    object: { apiVersion: 'v1', kind: 'List', items: rows.map((r) => r.object) },
    names: rows.map((r) => r.name),
    headers: inv.allNamespaces ? ['NAMESPACE', ...headers] : headers,
    rows: rows.map(withNs),
    wide: { headers: ['ADDRESS', 'CLAIM-ID'], rows: rows.map((r) => r.wide) },
    empty: inv.allNamespaces ? 'No sandboxes found.' : `No sandboxes found in ${ns} namespace.`,
  };
}

/**
 * A sandboxd node as the suites reach it over HTTP: the simulator's own rows, counters and
 * fault control (`/_sim/faults`), authenticated with the node's own root token. Local processes and the
 * host-network DaemonSet of the installed chart answer the same API.
 */
export interface SandboxdNode {
  /** The node name claims and NodeInventories carry. */
  name: string;
  /** http://host:port of its sandboxd (the simulator). */
  url: string;
  /** Its sandboxd root token: its own, derived from the fleet token and its name (per-node tokens). */
  token: string;
}

/** One row of `GET /v1/sandboxes`. */
export interface SandboxdRow {
  id: string;
  claim_ref?: string;
  deadline?: string;
}

export interface SandboxdInit {
  method?: string;
  body?: unknown;
}

export function sandboxdCall(node: SandboxdNode, path: string, init: SandboxdInit = {}): Promise<Response> {
  return fetch(`${node.url}${path}`, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${node.token}`, ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
}

/** Every sandbox the node holds, as the node itself lists it. */
export async function sandboxdRows(node: SandboxdNode): Promise<SandboxdRow[]> {
  const res = await sandboxdCall(node, '/v1/sandboxes');
  if (res.status !== 200) throw new Error(`GET ${node.url}/v1/sandboxes: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { sandboxes: SandboxdRow[] }).sandboxes;
}

/** The node's own row of a sandbox, or undefined once the node no longer has it. */
export async function sandboxdRow(node: SandboxdNode, id: string): Promise<SandboxdRow | undefined> {
  return (await sandboxdRows(node)).find((r) => r.id === id);
}

/** The ids of every sandbox on the given nodes. */
export async function sandboxdIds(nodes: readonly SandboxdNode[]): Promise<string[]> {
  const ids: string[] = [];
  for (const n of nodes) ids.push(...(await sandboxdRows(n)).map((r) => r.id));
  return ids;
}

/** Counters summed over the nodes. */
export interface SandboxdCounters {
  /** sandboxd_claims_total, every tier: VMs handed over. */
  claims: number;
  /** sandboxd_releases_total. */
  releases: number;
  /** POST /v1/claim requests received (the simulator's sandboxd_sim_requests_total): with `claims`, claims still being served. */
  claimRequests: number;
}

export async function sandboxdCounters(nodes: readonly SandboxdNode[]): Promise<SandboxdCounters> {
  const out: SandboxdCounters = { claims: 0, releases: 0, claimRequests: 0 };
  for (const n of nodes) {
    const text = await (await sandboxdCall(n, '/metrics')).text();
    for (const line of text.split('\n')) {
      const m = /^(sandboxd_claims_total|sandboxd_releases_total|sandboxd_sim_requests_total)(\{[^}]*\})? (\d+(?:\.\d+)?)$/.exec(line);
      if (!m) continue;
      const value = Number(m[3]);
      if (m[1] === 'sandboxd_claims_total') out.claims += value;
      else if (m[1] === 'sandboxd_releases_total') out.releases += value;
      else if (m[2] === '{method="POST",route="/v1/claim"}') out.claimRequests += value;
    }
  }
  return out;
}

/** Turns the simulator's faults on (`POST /_sim/faults`); throws unless it accepted them. */
export async function setSimFaults(node: SandboxdNode, faults: Record<string, unknown>): Promise<void> {
  const res = await sandboxdCall(node, '/_sim/faults', { method: 'POST', body: faults });
  if (res.status !== 200) throw new Error(`faults on ${node.name}: ${res.status} ${await res.text()}`);
}

export async function clearSimFaults(node: SandboxdNode): Promise<void> {
  await sandboxdCall(node, '/_sim/faults', { method: 'DELETE' });
}

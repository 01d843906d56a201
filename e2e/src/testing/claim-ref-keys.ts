import { OwnerRefKey } from '@sandbox-scale/scale-core';
import { Agent, request } from 'undici';
import type { SystemUnderTest } from '../system/system-under-test';
import { eventually } from './eventually';
import { samples } from './metric-names';

/** `signs:<id>` and `verifies:<id>` of a keyring (base64 keys, the signing one first), sorted. */
export function keyRoles(keys: readonly string[]): string[] {
  return OwnerRefKey.fromText(keys.join('\n'))
    .ids.map((id, i) => `${i === 0 ? 'signs' : 'verifies'}:${id}`)
    .sort();
}

/** What each claim-controller and sandbox-apiserver replica says it holds (sandbox_scale_claim_ref_key_info), as keyRoles. */
export async function replicaKeyRoles(sys: SystemUnderTest): Promise<Map<string, string[]>> {
  const pages = new Map<string, string>();
  for (const app of [...(await sys.metricsEndpoints()).keys()].filter((a) => /claim-controller/.test(a))) {
    const page = await sys.scrapeMetrics(app);
    if (page.status !== 200) throw new Error(`${app} /metrics: ${page.status}`);
    pages.set(app, page.text);
  }
  const token = await sys.metricsReaderToken();
  const dispatcher = new Agent({ connect: { ca: sys.servingCa, servername: sys.servernameOf(sys.apiserverUrl) } });
  try {
    for (const url of sys.apiserverUrls) {
      const r = await request(`${url}/metrics`, { dispatcher, headers: { authorization: `Bearer ${token}` } });
      pages.set(`sandbox-apiserver ${url}`, await r.body.text());
    }
  } finally {
    await dispatcher.close();
  }
  return new Map(
    [...pages].map(([app, page]) => [
      app,
      samples(page, 'sandbox_scale_claim_ref_key_info')
        .filter((s) => s.value === 1)
        .map((s) => `${s.labels.role ?? ''}:${s.labels.key_id ?? ''}`)
        .sort(),
    ]),
  );
}

/** Waits until every replica (at least two: a claim-controller and a sandbox-apiserver) holds exactly `keys`; resolves with how many do. */
export async function waitReplicasHold(sys: SystemUnderTest, keys: readonly string[], timeoutMs = 120_000): Promise<number> {
  const want = keyRoles(keys).join(', ');
  let replicas = 0;
  await eventually(
    async () => {
      const held = await replicaKeyRoles(sys);
      if (held.size < 2) throw new Error(`only ${held.size} replicas answered`);
      for (const [app, roles] of held) if (roles.join(', ') !== want) throw new Error(`${app} holds ${roles.join(', ')}, not yet ${want}`);
      replicas = held.size;
    },
    { timeoutMs, intervalMs: 1_000 },
  );
  return replicas;
}

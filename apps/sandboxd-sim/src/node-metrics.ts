/** The daemon's counters; gauges are read from the node's state at render time. */
export class NodeMetrics {
  claimsWarm = 0;
  claimsClone = 0;
  claimsCold = 0;
  claimSeconds = 0;
  wakeSeconds = 0;
  wakes = 0;
  hibernates = 0;
  forks = 0;
  checkpoints = 0;
  promotes = 0;
  releases = 0;
  reaps = 0;
  archives = 0;
  unarchives = 0;
  archiveDeletes = 0;
  /**
   * Requests served, by `METHOD route` (the route's pattern, e.g. `GET /v1/sandboxes/:id`): the
   * simulator's own series, so callers can count what a pass of theirs cost a node.
   */
  readonly requests = new Map<string, number>();

  countRequest(method: string, route: string): void {
    const key = `${method} ${route}`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
  }

  countClaim(tier: 'warm' | 'clone' | 'cold', seconds: number): void {
    if (tier === 'warm') this.claimsWarm++;
    else if (tier === 'clone') this.claimsClone++;
    else this.claimsCold++;
    this.claimSeconds += seconds;
  }
}

export interface MetricsView {
  claimed: number;
  hibernated: number;
  archived: number;
  draining: boolean;
  mesh: boolean;
  tenants: { name: string; claims: number }[];
  pools: { template: string; net: string; size: string; warm: number; target: number }[];
  counters: NodeMetrics;
}

function esc(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function series(lines: string[], name: string, type: 'gauge' | 'counter', samples: [string, number][]): void {
  lines.push(`# TYPE ${name} ${type}`);
  for (const [labels, v] of samples) lines.push(`${name}${labels} ${v}`);
}

/** Hand-written Prometheus text, as the daemon serves it. */
export function renderMetrics(v: MetricsView): string {
  const lines: string[] = [];
  const c = v.counters;
  series(lines, 'sandboxd_claimed', 'gauge', [['', v.claimed]]);
  series(lines, 'sandboxd_hibernated', 'gauge', [['', v.hibernated]]);
  series(lines, 'sandboxd_archived', 'gauge', [['', v.archived]]);
  series(lines, 'sandboxd_draining', 'gauge', [['', v.draining ? 1 : 0]]);
  series(
    lines,
    'sandboxd_tenant_claims',
    'gauge',
    v.tenants.map((t) => [`{tenant="${esc(t.name)}"}`, t.claims]),
  );
  const keyLabels = (p: MetricsView['pools'][number]): string => `{template="${esc(p.template)}",net="${p.net}",size="${p.size}"}`;
  series(
    lines,
    'sandboxd_pool_warm',
    'gauge',
    v.pools.map((p) => [keyLabels(p), p.warm]),
  );
  series(
    lines,
    'sandboxd_pool_target',
    'gauge',
    v.pools.map((p) => [keyLabels(p), p.target]),
  );
  if (v.mesh) series(lines, 'sandboxd_config_digest_mismatch', 'gauge', [['', 0]]);
  series(lines, 'sandboxd_claims_total', 'counter', [
    ['{tier="warm"}', c.claimsWarm],
    ['{tier="clone"}', c.claimsClone],
    ['{tier="cold"}', c.claimsCold],
  ]);
  series(lines, 'sandboxd_claim_seconds_total', 'counter', [['', c.claimSeconds]]);
  series(lines, 'sandboxd_wake_seconds_total', 'counter', [['', c.wakeSeconds]]);
  const plain: [string, number][] = [
    ['wakes', c.wakes],
    ['hibernates', c.hibernates],
    ['forks', c.forks],
    ['checkpoints', c.checkpoints],
    ['promotes', c.promotes],
    ['releases', c.releases],
    ['reaps', c.reaps],
    ['archives', c.archives],
    ['unarchives', c.unarchives],
    ['archive_deletes', c.archiveDeletes],
  ];
  for (const [name, value] of plain) series(lines, `sandboxd_${name}_total`, 'counter', [['', value]]);
  const requests = [...c.requests].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  series(
    lines,
    'sandboxd_sim_requests_total',
    'counter',
    requests.map(([key, n]) => {
      const [method = '', route = ''] = key.split(' ');
      return [`{method="${esc(method)}",route="${esc(route)}"}`, n];
    }),
  );
  return `${lines.join('\n')}\n`;
}

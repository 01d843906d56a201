import type { ServerResponse } from 'node:http';
import { renderChecks, type CheckResult } from '@sandbox-scale/kube-runtime';

/** /healthz, /livez, /readyz: anonymous, text/plain, `?verbose` lists checks. */
export class HealthChecks {
  shuttingDown = false;
  constructor(private readonly inventorySynced: () => boolean) {}

  serve(url: URL, res: ServerResponse): void {
    const [, kind = '', sub = ''] = url.pathname.split('/');
    const checks: CheckResult[] = [{ name: 'ping', ok: true }];
    if (kind === 'readyz')
      checks.push(
        { name: 'inventory-synced', ok: this.inventorySynced(), reason: 'no NodeInventory list has completed yet' },
        { name: 'shutdown', ok: !this.shuttingDown, reason: 'the server is shutting down' },
      );
    const excluded = new Set(url.searchParams.getAll('exclude'));
    const selected = checks.filter(({ name }) => !excluded.has(name) && (sub === '' || sub === name));
    if (selected.length === 0) {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('not found');
      return;
    }
    // kube-apiserver answers a failed probe with 500; the aggregator and kubelet read it the same way
    const r = renderChecks(kind, selected, url.searchParams.has('verbose'), { failedStatus: 500 });
    res.writeHead(r.status, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end(r.body);
  }
}

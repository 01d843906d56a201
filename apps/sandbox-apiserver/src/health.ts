import type { ServerResponse } from 'node:http';

/** /healthz, /livez, /readyz (k8s-api.md §4.14): anonymous, text/plain, `?verbose` lists checks. */
export class HealthChecks {
  shuttingDown = false;
  constructor(private readonly inventorySynced: () => boolean) {}

  serve(url: URL, res: ServerResponse): void {
    const [, kind = '', sub = ''] = url.pathname.split('/');
    const checks: Array<[string, boolean]> = [['ping', true]];
    if (kind === 'readyz') checks.push(['inventory-synced', this.inventorySynced()], ['shutdown', !this.shuttingDown]);
    const excluded = new Set(url.searchParams.getAll('exclude'));
    const selected = checks.filter(([name]) => !excluded.has(name) && (sub === '' || sub === name));
    if (selected.length === 0) {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('not found');
      return;
    }
    const ok = selected.every(([, pass]) => pass);
    const verbose = url.searchParams.has('verbose') || !ok;
    const lines = selected.map(([name, pass]) => `[${pass ? '+' : '-'}]${name} ${pass ? 'ok' : 'failed'}`);
    res.writeHead(ok ? 200 : 500, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end(verbose ? `${lines.join('\n')}\n${kind} check ${ok ? 'passed' : 'failed'}\n` : 'ok');
  }
}

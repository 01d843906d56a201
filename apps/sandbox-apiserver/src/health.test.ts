import type { ServerResponse } from 'node:http';
import { HealthChecks } from './health';

/** What the handler wrote: status and body. */
function probe(checks: HealthChecks, path: string): { status: number; body: string } {
  const out = { status: 0, body: '' };
  const res = {
    writeHead: (status: number) => {
      out.status = status;
      return res;
    },
    end: (body: string) => {
      out.body = body;
      return res;
    },
  };
  checks.serve(new URL(`https://localhost${path}`), res as unknown as ServerResponse);
  return out;
}

describe('HealthChecks', () => {
  it('answers ok while synced, and lists the checks with ?verbose', () => {
    const checks = new HealthChecks(() => true);
    expect(probe(checks, '/readyz')).toEqual({ status: 200, body: 'ok' });
    expect(probe(checks, '/readyz?verbose').body).toBe('[+]ping ok\n[+]inventory-synced ok\n[+]shutdown ok\nreadyz check passed\n');
    expect(probe(checks, '/livez')).toEqual({ status: 200, body: 'ok' });
  });

  it('fails readiness with 500 naming the check until the inventory list completes, and once shutting down', () => {
    let synced = false;
    const checks = new HealthChecks(() => synced);
    const r = probe(checks, '/readyz');
    expect(r.status).toBe(500);
    expect(r.body).toBe('[-]inventory-synced failed: no NodeInventory list has completed yet\nreadyz check failed\n');
    expect(probe(checks, '/healthz').status).toBe(200);
    synced = true;
    checks.shuttingDown = true;
    expect(probe(checks, '/readyz').body).toMatch(/^\[-\]shutdown failed: the server is shutting down\n/);
    expect(probe(checks, '/readyz?exclude=shutdown').status).toBe(200);
  });

  it('serves one named check, and 404 for a check it does not have', () => {
    const checks = new HealthChecks(() => false);
    expect(probe(checks, '/readyz/ping')).toEqual({ status: 200, body: 'ok' });
    expect(probe(checks, '/readyz/inventory-synced').status).toBe(500);
    expect(probe(checks, '/readyz/nothing').status).toBe(404);
  });
});

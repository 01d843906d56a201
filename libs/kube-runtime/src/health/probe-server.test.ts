import { Counter, Registry } from 'prom-client';
import { ProbeServer } from './probe-server';
import { BindAddressError, parseBindAddress } from './bind-address';
import { captureLog } from '../testing/capture-log';

describe('ProbeServer', () => {
  let server: ProbeServer;
  let base: string;
  let synced = false;

  beforeAll(async () => {
    const registry = new Registry();
    new Counter({ name: 'sandbox_scale_test_total', help: 'x', registers: [registry] }).inc(3);
    server = new ProbeServer({ log: captureLog().log, registry });
    server.addHealthzCheck('ping', () => true);
    server.addReadyzCheck('informer:sandboxwarmpools', () => synced);
    server.addReadyzCheck('leader', async () => undefined);
    const a = await server.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${a.port}`;
  });
  afterAll(() => server.close());

  it('answers /healthz ok', async () => {
    const r = await fetch(`${base}/healthz`);
    expect(r.status).toBe(200);
    expect(await r.text()).toBe('ok');
  });

  it('answers /readyz 503 naming the failing check, then 200 once it passes', async () => {
    synced = false;
    const r = await fetch(`${base}/readyz`);
    expect(r.status).toBe(503);
    const body = await r.text();
    expect(body).toContain('[-]informer:sandboxwarmpools failed');
    expect(body).not.toContain('leader');
    synced = true;
    const ok = await fetch(`${base}/readyz?verbose`);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('[+]informer:sandboxwarmpools ok');
  });

  it('serves the registry on /metrics', async () => {
    const r = await fetch(`${base}/metrics`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/plain');
    expect(await r.text()).toContain('sandbox_scale_test_total 3');
  });

  it('answers 404 elsewhere', async () => {
    expect((await fetch(`${base}/nope`)).status).toBe(404);
  });
});

describe('parseBindAddress', () => {
  it.each([
    [':8080', { host: '', port: 8080 }],
    ['127.0.0.1:9', { host: '127.0.0.1', port: 9 }],
    ['[::1]:8081', { host: '::1', port: 8081 }],
    ['0', undefined],
  ])('%s', (input, expected) => {
    expect(parseBindAddress(input)).toEqual(expected);
  });
  it('rejects garbage', () => {
    expect(() => parseBindAddress('8080')).toThrow(BindAddressError);
    expect(() => parseBindAddress(':99999')).toThrow(/not host:port/);
  });
});

import { asSandboxdHttpError } from '@sandbox-scale/sandboxd-client';
import { ACME, GLOBEX, ROOT, caught, raw, startTestSim, type TestSim } from './helpers';

const BASE = 'base:24.04';

describe('auth rules (root, tenant and sandbox tokens)', () => {
  let t: TestSim;
  beforeEach(async () => {
    t = await startTestSim();
  });
  afterEach(async () => t.close());

  it('answers 401 invalid api token on node-token endpoints without a valid token', async () => {
    for (const token of [undefined, 'nope']) {
      const opts = token ? { token } : {};
      expect(await raw(t.url(), 'POST', '/v1/claim', { ...opts, body: `{"template":"${BASE}"}` })).toMatchObject({
        status: 401,
        json: { error: 'invalid api token' },
      });
      expect(await raw(t.url(), 'GET', '/v1/sandboxes', opts)).toMatchObject({ status: 401 });
      expect(await raw(t.url(), 'GET', '/v1/info', opts)).toMatchObject({ status: 401, json: { error: 'invalid api token' } });
      expect(await raw(t.url(), 'GET', '/v1/peers', opts)).toMatchObject({ status: 401 });
      expect(await raw(t.url(), 'PUT', '/v1/pools', { ...opts, body: '{"pools":[]}' })).toMatchObject({ status: 401 });
      expect(await raw(t.url(), 'POST', '/v1/drain', opts)).toMatchObject({ status: 401 });
      expect(await raw(t.url(), 'GET', '/metrics', opts)).toMatchObject({ status: 401 });
    }
  });

  it('answers 403 operator token required to a tenant on root-only endpoints', async () => {
    const c = await t.root().claim({ template: BASE });
    const paths: ['GET' | 'PUT' | 'POST' | 'DELETE', string, string?][] = [
      ['GET', '/v1/info'],
      ['GET', `/v1/sandboxes/${c.id}`],
      ['GET', `/v1/sandboxes/${c.id}/stats`],
      ['PUT', '/v1/pools', '{"pools":[]}'],
      ['POST', '/v1/drain'],
      ['DELETE', '/v1/drain'],
      ['GET', '/metrics'],
    ];
    for (const [method, path, body] of paths) {
      const r = await raw(t.url(), method, path, { token: ACME.token, ...(body ? { body } : {}) });
      expect([path, r.status, r.json]).toEqual([path, 403, { error: 'operator token required' }]);
    }
  });

  it('lets tenants claim, list only their own, and reach peers', async () => {
    const a = await t.root().claim({ template: BASE, claimRef: 'ns/a' }, { token: ACME.token });
    await t.root().claim({ template: BASE }, { token: GLOBEX.token });
    await t.root().claim({ template: BASE });
    expect((await t.root().sandboxes(undefined, { token: ACME.token })).map((r) => r.id)).toEqual([a.id]);
    expect(await t.root().sandboxes()).toHaveLength(3);
    expect(await t.root().peers({ token: ACME.token })).toEqual([]);
  });

  it('sorts rows by id and never lists tokens', async () => {
    for (let i = 0; i < 5; i++) await t.root().claim({ template: BASE });
    const r = await raw(t.url(), 'GET', '/v1/sandboxes', { token: ROOT });
    const rows = (r.json as { sandboxes: { id: string; token?: string }[] }).sandboxes;
    expect(rows.map((x) => x.id)).toEqual(rows.map((x) => x.id).sort());
    expect(rows.every((x) => x.token === undefined)).toBe(true);
  });

  it('needs a bearer on sandbox-scoped verbs (401) and hides ids behind 404', async () => {
    const c = await t.root().claim({ template: BASE });
    for (const verb of ['release', 'hibernate', 'wake', 'renew']) {
      expect(await raw(t.url(), 'POST', `/v1/sandboxes/${c.id}/${verb}`)).toMatchObject({
        status: 401,
        json: { error: 'missing bearer token' },
      });
      expect(await raw(t.url(), 'POST', `/v1/sandboxes/${c.id}/${verb}`, { token: GLOBEX.token })).toMatchObject({
        status: 404,
        json: { error: 'unknown sandbox' },
      });
      expect(await raw(t.url(), 'POST', `/v1/sandboxes/sb_ffffffffffffffff/${verb}`, { token: c.token })).toMatchObject({ status: 404 });
    }
    expect(await raw(t.url(), 'GET', `/v1/sandboxes/${c.id}/owner`)).toMatchObject({ status: 401 });
  });

  it('checks the body token on fork, promote and checkpoint (404 for a wrong one)', async () => {
    const c = await t.root().claim({ template: BASE });
    for (const [verb, body] of [
      ['fork', '{"count":1,"token":"wrong"}'],
      ['promote', '{"template":"x:1","token":"wrong"}'],
      ['checkpoint', '{"token":"wrong"}'],
    ] as const) {
      expect(await raw(t.url(), 'POST', `/v1/sandboxes/${c.id}/${verb}`, { token: ACME.token, body })).toMatchObject({
        status: 404,
        json: { error: 'unknown sandbox' },
      });
      expect(await raw(t.url(), 'POST', `/v1/sandboxes/${c.id}/${verb}`, { token: 'bogus', body })).toMatchObject({ status: 401 });
    }
    expect(
      await raw(t.url(), 'POST', `/v1/sandboxes/${c.id}/checkpoint`, { token: ACME.token, body: `{"token":"${c.token}"}` }),
    ).toMatchObject({ status: 200 });
  });

  it('answers 404 for an unknown path and 405 for a wrong method', async () => {
    expect((await raw(t.url(), 'GET', '/v1/nope', { token: ROOT })).status).toBe(404);
    expect((await raw(t.url(), 'DELETE', '/v1/info', { token: ROOT })).status).toBe(405);
    expect(await raw(t.url(), 'GET', '/healthz')).toMatchObject({ status: 200, text: 'ok' });
    await expect(t.root().healthz({ token: '' })).resolves.toBe('ok');
  });
});

describe('an open node (no api_token, no tenants)', () => {
  let t: TestSim;
  beforeEach(async () => {
    t = await startTestSim({ token: '', tenants: [] });
  });
  afterEach(async () => t.close());

  it('accepts node-token and root-only requests without a header', async () => {
    const c = await t.root().claim({ template: BASE });
    expect((await t.root().info()).claimed).toBe(1);
    expect(await raw(t.url(), 'GET', '/metrics')).toMatchObject({ status: 200 });
    // no operator path: the single read never shows the token
    expect((await t.root().sandbox(c.id)).token).toBeUndefined();
  });

  it('still needs the sandbox token on sandbox-scoped verbs', async () => {
    const c = await t.root().claim({ template: BASE });
    expect(asSandboxdHttpError(await caught(t.root().hibernate(c.id)))).toMatchObject({ statusCode: 401, message: 'missing bearer token' });
    expect(asSandboxdHttpError(await caught(t.root().fork(c.id, { count: 1 }))))?.toMatchObject({ statusCode: 404 });
    await t.root().release(c.id, { token: c.token });
    expect((await t.root().info()).claimed).toBe(0);
  });
});

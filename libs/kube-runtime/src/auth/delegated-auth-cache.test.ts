import { KubeConfig } from '@kubernetes/client-node';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FakeClock } from '../testing/fake-clock';
import { DelegatedAuth, isAuthUnavailable, isReviewsBusy, type AccessAttributes, type UserInfo } from './delegated-auth';

/**
 * The caches of DelegatedAuth on manual time, against a stand-in API server whose answers the
 * test changes (a token revoked, a RoleBinding removed or added) and whose reviews it counts.
 */
describe('DelegatedAuth caches', () => {
  let server: Server;
  let kc: KubeConfig;
  const goodTokens = new Set<string>();
  let allowed = true;
  let tokenReviews = 0;
  let accessReviews = 0;
  // answers held back until released (a review under way while other callers arrive)
  let hold: (() => void)[] | undefined;

  function answer(req: IncomingMessage, res: ServerResponse): void {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const send = (): void => {
        const spec = (JSON.parse(body) as { spec: { token?: string } }).spec;
        let status: unknown;
        if (req.url?.includes('tokenreviews')) {
          tokenReviews++;
          const ok = goodTokens.has(spec.token ?? '');
          status = ok
            ? { authenticated: true, audiences: ['fast'], user: { username: 'alice', groups: ['dev'] } }
            : { authenticated: false };
        } else {
          accessReviews++;
          status = allowed ? { allowed: true } : { allowed: false, reason: 'no RoleBinding' };
        }
        res.writeHead(201, { 'Content-Type': 'application/json' }).end(JSON.stringify({ status }));
      };
      if (hold) hold.push(send);
      else send();
    });
  }

  beforeAll(async () => {
    server = createServer(answer);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => {
    goodTokens.clear();
    goodTokens.add('good');
    allowed = true;
    tokenReviews = 0;
    accessReviews = 0;
    hold = undefined;
  });

  const alice: UserInfo = { username: 'alice', groups: ['dev'], extra: {} };
  const create: AccessAttributes = { resource: { namespace: 'ns', verb: 'create', group: 'g', resource: 'claims' } };
  const TTL = { authenticatedTtlMs: 10_000, unauthenticatedTtlMs: 5_000, allowedTtlMs: 10_000, deniedTtlMs: 5_000 };

  /** Waits (on real time) until the background review in flight has settled. */
  async function idle(auth: DelegatedAuth): Promise<void> {
    while (auth.reviewsInFlight > 0) await new Promise((r) => setTimeout(r, 1));
  }

  it("answers a caller's repeat calls from the cache: one TokenReview and one SubjectAccessReview", async () => {
    const clock = new FakeClock();
    const auth = new DelegatedAuth(kc, { audiences: ['fast'], ...TTL, now: clock.now });
    for (let i = 0; i < 100; i++) {
      expect(await auth.authenticateToken('good')).toMatchObject({ username: 'alice' });
      expect(await auth.authorize(alice, create)).toEqual({ allowed: true, reason: '' });
    }
    expect(tokenReviews).toBe(1);
    expect(accessReviews).toBe(1);
  });

  it('sees a revoked token and a removed RoleBinding within the positive TTL', async () => {
    const clock = new FakeClock();
    const auth = new DelegatedAuth(kc, { audiences: ['fast'], ...TTL, refreshAfter: 1, now: clock.now });
    expect(await auth.authenticateToken('good')).toBeDefined();
    expect((await auth.authorize(alice, create)).allowed).toBe(true);
    goodTokens.delete('good');
    allowed = false;
    await clock.advance(9_999);
    // still inside the TTL: the cached answer stands
    expect(await auth.authenticateToken('good')).toBeDefined();
    expect((await auth.authorize(alice, create)).allowed).toBe(true);
    await clock.advance(1);
    expect(await auth.authenticateToken('good')).toBeUndefined();
    expect(await auth.authorize(alice, create)).toEqual({ allowed: false, reason: 'no RoleBinding' });
    expect(tokenReviews).toBe(2);
    expect(accessReviews).toBe(2);
  });

  it('keeps a refusal for the negative TTL only: a newly bound caller is let in after it', async () => {
    const clock = new FakeClock();
    allowed = false;
    goodTokens.clear();
    const auth = new DelegatedAuth(kc, { audiences: ['fast'], ...TTL, now: clock.now });
    expect(await auth.authenticateToken('good')).toBeUndefined();
    expect((await auth.authorize(alice, create)).allowed).toBe(false);
    goodTokens.add('good');
    allowed = true;
    await clock.advance(4_999);
    expect(await auth.authenticateToken('good')).toBeUndefined();
    expect((await auth.authorize(alice, create)).allowed).toBe(false);
    expect(tokenReviews).toBe(1);
    expect(accessReviews).toBe(1);
    await clock.advance(1);
    expect(await auth.authenticateToken('good')).toMatchObject({ username: 'alice' });
    expect((await auth.authorize(alice, create)).allowed).toBe(true);
    expect(tokenReviews).toBe(2);
    expect(accessReviews).toBe(2);
  });

  it('renews a positive answer in the background past half its TTL, serving the cached one meanwhile', async () => {
    const clock = new FakeClock();
    const auth = new DelegatedAuth(kc, { audiences: ['fast'], ...TTL, now: clock.now });
    await auth.authenticateToken('good');
    await auth.authorize(alice, create);
    await clock.advance(4_999);
    await auth.authenticateToken('good');
    await auth.authorize(alice, create);
    expect([tokenReviews, accessReviews]).toEqual([1, 1]);
    await clock.advance(1);
    hold = [];
    // answered at once from the cache; the renewals wait on the (held) API server
    expect(await auth.authenticateToken('good')).toMatchObject({ username: 'alice' });
    expect((await auth.authorize(alice, create)).allowed).toBe(true);
    // more hits while the renewals run start no other review
    await auth.authenticateToken('good');
    await auth.authorize(alice, create);
    expect(auth.reviewsInFlight).toBe(2);
    await eventuallyHeld(2);
    for (const send of hold.splice(0)) send();
    hold = undefined;
    await idle(auth);
    expect([tokenReviews, accessReviews]).toEqual([2, 2]);
    // the renewed answers count from when they were fetched: good until 10 s after that
    await clock.advance(9_999);
    goodTokens.delete('good');
    allowed = false;
    expect(await auth.authenticateToken('good')).toBeDefined();
    await idle(auth);
    // the renewal this hit started saw the revocation: the entry is gone at once
    expect(await auth.authenticateToken('good')).toBeUndefined();
    expect((await auth.authorize(alice, create)).allowed).toBe(true);
    await idle(auth);
    expect((await auth.authorize(alice, create)).allowed).toBe(false);
  });

  it('shares one review among concurrent first calls of the same caller', async () => {
    const clock = new FakeClock();
    const auth = new DelegatedAuth(kc, { audiences: ['fast'], ...TTL, now: clock.now });
    hold = [];
    const users = Array.from({ length: 64 }, () => auth.authenticateToken('good'));
    const decisions = Array.from({ length: 64 }, () => auth.authorize(alice, create));
    await eventuallyHeld(2);
    for (const send of hold.splice(0)) send();
    for (const u of await Promise.all(users)) expect(u).toMatchObject({ username: 'alice' });
    for (const d of await Promise.all(decisions)) expect(d.allowed).toBe(true);
    expect([tokenReviews, accessReviews]).toEqual([1, 1]);
    expect(auth.reviewsInFlight).toBe(0);
  });

  it('lets one caller stop waiting without failing the others that share its review', async () => {
    const clock = new FakeClock();
    const auth = new DelegatedAuth(kc, { audiences: ['fast'], ...TTL, now: clock.now });
    hold = [];
    const ac = new AbortController();
    const leaving = auth.authenticateToken('good', ac.signal).then(
      () => undefined,
      (e: unknown) => e,
    );
    const staying = auth.authenticateToken('good');
    await eventuallyHeld(1);
    ac.abort();
    expect(isAuthUnavailable(await leaving)).toBe(true);
    for (const send of hold.splice(0)) send();
    expect(await staying).toMatchObject({ username: 'alice' });
    expect(tokenReviews).toBe(1);
  });

  it('stays within its bound under a flood of bad tokens, the good caller kept', async () => {
    const clock = new FakeClock();
    const auth = new DelegatedAuth(kc, { audiences: ['fast'], ...TTL, maxEntries: 8, now: clock.now });
    await auth.authenticateToken('good');
    for (let i = 0; i < 40; i++) expect(await auth.authenticateToken(`bad-${i}`)).toBeUndefined();
    expect(tokenReviews).toBe(41);
    expect(await auth.authenticateToken('good')).toMatchObject({ username: 'alice' });
    // the oldest bad tokens were evicted: asked again
    expect(await auth.authenticateToken('bad-0')).toBeUndefined();
    expect(tokenReviews).toBe(42);
  });

  it('refuses a token past its TokenReviews in flight with 429, still serving cached callers, and takes new ones once they settle', async () => {
    const clock = new FakeClock();
    const auth = new DelegatedAuth(kc, { audiences: ['fast'], ...TTL, maxTokenReviewsInFlight: 4, now: clock.now });
    expect(await auth.authenticateToken('good')).toMatchObject({ username: 'alice' });
    hold = [];
    // a flood of new tokens: four reviews open, the rest refused at once without a request
    const flood = Array.from({ length: 20 }, (_, i) =>
      auth.authenticateToken(`new-${i}`).then(
        (u) => ({ u }),
        (e: unknown) => ({ e }),
      ),
    );
    await eventuallyHeld(4);
    const refused = (await Promise.all(flood.slice(4))).map((r) => ('e' in r ? r.e : r));
    expect(refused.every((e) => isReviewsBusy(e))).toBe(true);
    expect(refused[0]).toMatchObject({ code: 429, reason: 'TooManyRequests', details: { retryAfterSeconds: 1 } });
    expect(isAuthUnavailable(refused[0])).toBe(false);
    // a cached caller is not held behind them, and a repeat of a token under review shares its review
    expect(await auth.authenticateToken('good')).toMatchObject({ username: 'alice' });
    const repeat = auth.authenticateToken('new-0');
    expect(auth.reviewsInFlight).toBe(4);
    for (const send of hold.splice(0)) send();
    hold = undefined;
    expect(await repeat).toBeUndefined();
    expect((await Promise.all(flood.slice(0, 4))).map((r) => ('u' in r ? r.u : 'refused'))).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(tokenReviews).toBe(5);
    // the bound is of reviews open, not of callers: once they settle a new token is reviewed
    goodTokens.add('later');
    expect(await auth.authenticateToken('later')).toMatchObject({ username: 'alice' });
    expect(tokenReviews).toBe(6);
  });

  it('does not count SubjectAccessReviews against the bound: an authenticated caller is held by its per-user caps', async () => {
    const clock = new FakeClock();
    const auth = new DelegatedAuth(kc, { audiences: ['fast'], ...TTL, maxTokenReviewsInFlight: 2, now: clock.now });
    hold = [];
    const decisions = Array.from({ length: 10 }, (_, i) =>
      auth.authorize(alice, { resource: { namespace: 'ns', verb: 'delete', group: 'g', resource: 'claims', name: `c${i}` } }),
    );
    await eventuallyHeld(10);
    for (const send of hold.splice(0)) send();
    hold = undefined;
    expect((await Promise.all(decisions)).every((d) => d.allowed)).toBe(true);
    expect(accessReviews).toBe(10);
  });

  async function eventuallyHeld(n: number): Promise<void> {
    while ((hold?.length ?? 0) < n) await new Promise((r) => setTimeout(r, 1));
  }
});

import { AuthUnavailableError, ReviewsBusyError, type UserInfo } from '@sandbox-scale/kube-runtime';
import { bearerTokenOf, KubernetesRouterAuth, OpenRouterAuth, type RouterCaller } from './router-auth';
import { asRouterError } from './router-errors';
import { FakeReviews } from './router-fixture';
import type { RoutingTarget } from './routing-headers';

const alice: UserInfo = { username: 'system:serviceaccount:team-a:alice', groups: ['system:serviceaccounts'], extra: {} };

const target = (namespace: string, name: string): RoutingTarget => ({ namespace, name, port: 8888, timeoutMs: 60_000 });

async function refusal(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
    return 'admitted';
  } catch (err) {
    const e = asRouterError(err);
    return { status: e?.status, detail: e?.detail, headers: e?.headers, retryAfterSeconds: e?.retryAfterSeconds };
  }
}

describe('bearerTokenOf', () => {
  it('reads one Authorization: Bearer header, any case of the scheme', () => {
    expect(bearerTokenOf({ authorization: ['Bearer abc.def'] })).toBe('abc.def');
    expect(bearerTokenOf({ authorization: ['bearer   abc'] })).toBe('abc');
  });

  it('is no token for another scheme, an empty one, or two Authorization headers', () => {
    expect(bearerTokenOf({})).toBeUndefined();
    expect(bearerTokenOf({ authorization: ['Basic YTpi'] })).toBeUndefined();
    expect(bearerTokenOf({ authorization: ['Bearer '] })).toBeUndefined();
    expect(bearerTokenOf({ authorization: ['Bearer a b'] })).toBeUndefined();
    expect(bearerTokenOf({ authorization: ['Bearer a', 'Bearer b'] })).toBeUndefined();
  });
});

describe('KubernetesRouterAuth', () => {
  let reviews: FakeReviews;
  let auth: KubernetesRouterAuth;
  beforeEach(() => {
    reviews = new FakeReviews();
    reviews.tokens.set('alice-token', alice);
    reviews.grants.add('system:serviceaccount:team-a:alice create sandboxes/portforward team-a/s1');
    auth = new KubernetesRouterAuth(reviews);
  });

  it('admits a token the API server knows to a sandbox it may port-forward to', async () => {
    const caller = await auth.authenticate({ authorization: ['Bearer alice-token'] });
    expect(caller).toEqual({ user: { ...alice, groups: ['system:serviceaccounts', 'system:authenticated'] } });
    expect(await refusal(auth.authorize(caller, target('team-a', 's1')))).toBe('admitted');
  });

  it('answers 401 with WWW-Authenticate for no token and for a token the API server does not know', async () => {
    const headers = { 'www-authenticate': 'Bearer realm="sandbox-router"' };
    expect(await refusal(auth.authenticate({}))).toEqual({
      status: 401,
      detail: 'A bearer token is required: Authorization: Bearer <Kubernetes token>.',
      headers,
      retryAfterSeconds: undefined,
    });
    expect(await refusal(auth.authenticate({ authorization: ['Bearer made-up'] }))).toEqual({
      status: 401,
      detail: 'The bearer token is not valid.',
      headers,
      retryAfterSeconds: undefined,
    });
  });

  it('answers 403 naming the user, the verb, the subresource and the namespace for another sandbox or namespace', async () => {
    const caller = await auth.authenticate({ authorization: ['Bearer alice-token'] });
    expect(await refusal(auth.authorize(caller, target('team-b', 's1')))).toMatchObject({
      status: 403,
      detail:
        'sandboxes.agents.x-k8s.io "s1" is forbidden: User "system:serviceaccount:team-a:alice" cannot create resource "sandboxes/portforward" in API group "agents.x-k8s.io" in the namespace "team-b": no RBAC policy matched',
    });
    expect(await refusal(auth.authorize(caller, target('team-a', 's2')))).toMatchObject({ status: 403 });
  });

  it('refuses with 503 or 429 and Retry-After when a review cannot be made, never admitting', async () => {
    reviews.failing = new AuthUnavailableError('authentication', new Error('connection refused'));
    expect(await refusal(auth.authenticate({ authorization: ['Bearer alice-token'] }))).toEqual({
      status: 503,
      detail: 'authentication is unavailable, retry later',
      headers: {},
      retryAfterSeconds: 1,
    });
    reviews.failing = new ReviewsBusyError('authentication', 8);
    expect(await refusal(auth.authenticate({ authorization: ['Bearer alice-token'] }))).toMatchObject({
      status: 429,
      detail: 'too many authentication reviews in flight (8), retry later',
      retryAfterSeconds: 1,
    });
    const caller: RouterCaller = { user: alice };
    reviews.failing = new AuthUnavailableError('authorization', new Error('timeout'));
    expect(await refusal(auth.authorize(caller, target('team-a', 's1')))).toMatchObject({ status: 503 });
  });
});

describe('OpenRouterAuth', () => {
  it('admits anyone as anonymous', async () => {
    const open = new OpenRouterAuth();
    const caller = await open.authenticate();
    expect(caller).toEqual({ anonymous: true });
    expect(await refusal(open.authorize())).toBe('admitted');
  });
});

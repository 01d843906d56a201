import { errorBody, isQueryError, NewSandboxSchema, parseListQuery } from './control-plane';

const q = (s: string): URLSearchParams => new URL(`http://x/v2/sandboxes?${s}`).searchParams;

describe('the control plane', () => {
  it('reads the double-encoded metadata filter and the comma-joined state as the SDKs send them', () => {
    const f = parseListQuery(q('state=running,paused&metadata=app%3Dx%252520y%26team%3Da&limit=10&nextToken=t1&order=desc'));
    expect({ ...f.metadata }).toEqual({ app: 'x y', team: 'a' });
    expect(f).toMatchObject({ states: ['running', 'paused'], limit: 10, nextToken: 't1', order: 'desc' });
    expect(parseListQuery(q('')).states).toEqual(['running', 'paused']);
    expect(parseListQuery(q('state=paused')).states).toEqual(['paused']);
  });

  it('keeps a metadata key named __proto__ as data', () => {
    const f = parseListQuery(q('metadata=__proto__%3Dx'));
    expect(Object.keys(f.metadata)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(f.metadata)).toBeNull();
  });

  it.each([
    ['state=stopped', 'state "stopped" is not running or paused'],
    ['limit=0', 'limit must be a whole number in 1-1000, got "0"'],
    ['limit=abc', 'limit must be a whole number'],
    ['startedAfter=yesterday', 'startedAfter "yesterday" is not an ISO-8601 time'],
    ['order=up', 'order must be asc or desc, got "up"'],
    ['metadata=a%3D%25zz', 'is not percent-encoded text'],
  ])('refuses %s', (query, message) => {
    let err: unknown;
    try {
      parseListQuery(q(query));
    } catch (e) {
      err = e;
    }
    expect(isQueryError(err)).toBe(true);
    expect((err as Error).message).toContain(message);
  });

  it('accepts the create bodies of JS (fields only when set) and Python (metadata and envVars always)', () => {
    expect(NewSandboxSchema.parse({ templateID: 'base' })).toEqual({ templateID: 'base' });
    expect(NewSandboxSchema.parse({ templateID: 'base', metadata: {}, envVars: {}, timeout: 60 })).toMatchObject({ timeout: 60 });
    expect(NewSandboxSchema.safeParse({}).success).toBe(false);
    expect(NewSandboxSchema.safeParse({ templateID: 'base', timeout: -1 }).success).toBe(false);
  });

  it('answers errors as {code, message}', () => {
    expect(errorBody(404, 'sandbox x not found')).toEqual({ code: 404, message: 'sandbox x not found' });
  });
});

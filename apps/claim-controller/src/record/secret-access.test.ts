import { namespaceNotEnabledMessage, SecretAccess, type SecretReviewer } from './secret-access';

/** A reviewer over a set of namespaces where both verbs are allowed, counting the questions. */
function reviewer(allowed: Set<string>): SecretReviewer & { asked: string[] } {
  const asked: string[] = [];
  const fn = async (namespace: string, verb: string) => {
    asked.push(`${verb} ${namespace}`);
    return allowed.has(namespace) ? { allowed: true, reason: '' } : { allowed: false, reason: '' };
  };
  return Object.assign(fn, { asked });
}

describe('SecretAccess', () => {
  it('asks create and patch once per namespace and serves the answer from the cache until it expires', async () => {
    let t = 0;
    const r = reviewer(new Set(['team-a']));
    const access = new SecretAccess({ review: r, allowedTtlMs: 30_000, deniedTtlMs: 10_000, now: () => t });
    expect(await access.check('team-a')).toEqual({ allowed: true, reason: '' });
    expect(await access.check('team-b')).toEqual({ allowed: false, reason: '' });
    expect(r.asked.sort()).toEqual(['create team-a', 'create team-b', 'patch team-a', 'patch team-b']);
    t = 9_999;
    await access.check('team-a');
    await access.check('team-b');
    expect(r.asked).toHaveLength(4);
    // a refusal expires first, so a namespace enabled meanwhile is seen on the next recheck
    t = 10_000;
    await access.check('team-b');
    await access.check('team-a');
    expect(r.asked).toHaveLength(6);
    t = 30_000;
    await access.check('team-a');
    expect(r.asked).toHaveLength(8);
  });

  it('refuses when either verb is refused, and forget() asks again at once', async () => {
    const asked: string[] = [];
    let patchAllowed = false;
    const access = new SecretAccess({
      review: async (namespace, verb) => {
        asked.push(verb);
        return verb === 'patch' && !patchAllowed ? { allowed: false, reason: 'no patch' } : { allowed: true, reason: '' };
      },
      now: () => 0,
    });
    expect(await access.check('ns')).toEqual({ allowed: false, reason: 'no patch' });
    patchAllowed = true;
    expect((await access.check('ns')).allowed).toBe(false);
    access.forget('ns');
    expect((await access.check('ns')).allowed).toBe(true);
    expect(asked).toHaveLength(4);
  });

  it('shares one review among concurrent checks and caches no failed review', async () => {
    let calls = 0;
    let fail = true;
    const access = new SecretAccess({
      review: async () => {
        calls++;
        await new Promise((r) => setImmediate(r));
        if (fail) throw new Error('apiserver away');
        return { allowed: true, reason: '' };
      },
      now: () => 0,
    });
    await expect(Promise.all([access.check('ns'), access.check('ns')])).rejects.toThrow('apiserver away');
    expect(calls).toBe(2); // create and patch, asked once for both callers
    fail = false;
    expect((await access.check('ns')).allowed).toBe(true);
  });

  it('remembers a bounded number of namespaces, dropping the oldest answer', async () => {
    const r = reviewer(new Set());
    const access = new SecretAccess({ review: r, maxEntries: 2, now: () => 0 });
    await access.check('a');
    await access.check('b');
    await access.check('c');
    expect(r.asked).toHaveLength(6);
    await access.check('c');
    await access.check('b');
    expect(r.asked).toHaveLength(6);
    await access.check('a');
    expect(r.asked).toHaveLength(8);
  });
});

describe('namespaceNotEnabledMessage', () => {
  it('names the namespace and the chart value to change', () => {
    const m = namespaceNotEnabledMessage('team-x', { allowed: false, reason: '' });
    expect(m).toContain('"team-x"');
    expect(m).toContain('claimController.secretNamespaces');
    expect(m).toContain('no sandbox was claimed');
  });
});

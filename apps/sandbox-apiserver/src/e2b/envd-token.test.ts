import { randomBytes } from 'node:crypto';
import { OwnerRefKey } from '@sandbox-scale/scale-core';
import { EnvdTokens } from './envd-token';

describe('envd access tokens', () => {
  const key = new OwnerRefKey(randomBytes(32));
  const tokens = new EnvdTokens(key);

  it('names one sandbox of one namespace, and nothing else', () => {
    const t = tokens.issue('team-a', 'sb-1');
    expect(t).toMatch(/^team-a\.[A-Za-z0-9_-]{22}$/);
    expect(tokens.namespaceOf(t, 'sb-1')).toBe('team-a');
    expect(tokens.namespaceOf(t, 'sb-2')).toBeUndefined();
    // the namespace is part of what the MAC covers: rewriting it fails
    expect(tokens.namespaceOf(t.replace('team-a', 'team-b'), 'sb-1')).toBeUndefined();
    for (const bad of [undefined, '', 'team-a', `${t}x`, `Team-A.${t.split('.')[1] ?? ''}`, `a.b.${t.split('.')[1] ?? ''}`])
      expect(tokens.namespaceOf(bad, 'sb-1')).toBeUndefined();
  });

  it("is never a claim reference's MAC, and follows the keyring's rotation", () => {
    const t = tokens.issue('team-a', 'sb-1');
    const mac = t.split('.')[1] ?? '';
    expect(key.verify('team-a\nsb-1', mac)).toBe(false);
    const old = randomBytes(32);
    const next = randomBytes(32);
    const ring = new OwnerRefKey(old);
    const held = new EnvdTokens(ring);
    const before = held.issue('team-a', 'sb-1');
    // the new key signs while the old one still verifies the tokens out there; then the old is dropped
    ring.replaceWith(new OwnerRefKey([next, old]));
    expect(held.namespaceOf(before, 'sb-1')).toBe('team-a');
    expect(held.issue('team-a', 'sb-1')).not.toBe(before);
    ring.replaceWith(new OwnerRefKey([next]));
    expect(held.namespaceOf(before, 'sb-1')).toBeUndefined();
  });
});

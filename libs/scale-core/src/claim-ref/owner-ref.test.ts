import { randomBytes } from 'node:crypto';
import {
  formatOwnerRef,
  formatOwnerRefPrefix,
  isInvalidOwnerRef,
  parseOwnerRef,
  provenOwnerOf,
  sameOwner,
  servedNameOf,
  servedObjectName,
  type SandboxOwner,
} from './owner-ref';
import { isInvalidOwnerRefKey, OwnerRefKey } from './owner-ref-key';
import { claimRefName, sandboxLabelsFor } from '../synthesis/synthesize-sandbox';

const uid = '0b3e6f0c-2d7a-4a55-9c51-6a0f3f1d2e4b';
const claim: SandboxOwner = { kind: 'SandboxClaim', uid, namespace: 'team-a', name: 'build-1' };
const key = new OwnerRefKey(randomBytes(32));
const otherKey = new OwnerRefKey(randomBytes(32));
const MAC = '[A-Za-z0-9_-]{22}';

describe('owner references', () => {
  it('formats kind, uid, MAC, namespace and name readably and parses them back proven', () => {
    const ref = formatOwnerRef(claim, key);
    expect(ref).toMatch(new RegExp(`^claim:${uid}:${MAC}:team-a/build-1$`));
    expect(parseOwnerRef(ref, key)).toEqual({ ...claim, proven: true });
    for (const kind of ['FastPathClaim', 'Sandbox', 'ForkChild', 'SnapshotClaim'] as const) {
      expect(parseOwnerRef(formatOwnerRef({ ...claim, kind }, key), key)).toEqual({ ...claim, kind, proven: true });
    }
  });

  it('a fork prefix plus the child id the node appends names the child, proven', () => {
    const prefix = formatOwnerRefPrefix({ kind: 'ForkChild', uid, namespace: 'team-a', name: 'parent-' }, key);
    const child = `${prefix}sb_0123456789abcdef`;
    expect(parseOwnerRef(child, key)).toEqual({
      kind: 'ForkChild',
      uid,
      namespace: 'team-a',
      name: 'parent-sb_0123456789abcdef',
      proven: true,
    });
    // the node chooses only the child id: a changed parent prefix is not proven
    expect(provenOwnerOf(child.replace('/parent-', '/other-'), key)).toBeUndefined();
    expect(() => formatOwnerRefPrefix({ kind: 'ForkChild', uid, namespace: 'team-a', name: 'parent' }, key)).toThrow(/end in "-"/);
  });

  it('fits the longest kind, uid, namespace and name in 392 bytes', () => {
    const long: SandboxOwner = { kind: 'SnapshotClaim', renewed: true, uid, namespace: 'n'.repeat(63), name: 'x'.repeat(253) };
    const ref = formatOwnerRef(long, key);
    expect(Buffer.byteLength(ref)).toBe(392);
    expect(parseOwnerRef(ref, key)).toEqual({ ...long, proven: true });
    expect(() => formatOwnerRef({ ...long, uid: 'u'.repeat(37) }, key)).toThrow(/not a uid/);
  });

  it('refuses to format an owner that would not parse back', () => {
    expect(() => formatOwnerRef({ ...claim, name: 'a/b' }, key)).toThrow();
    expect(() => formatOwnerRef({ ...claim, uid: 'x:y' }, key)).toThrow();
    try {
      formatOwnerRef({ ...claim, namespace: 'Bad_NS' }, key);
    } catch (err) {
      expect(isInvalidOwnerRef(err)).toBe(true);
    }
    expect(() => formatOwnerRef({ ...claim, namespace: 'Bad_NS' }, key)).toThrow(/DNS label/);
  });

  it('reads an old ns/name reference as legacy, which owns nothing', () => {
    const legacy = parseOwnerRef('team-a/build-1', key);
    expect(legacy).toEqual({ kind: 'legacy', namespace: 'team-a', name: 'build-1' });
    expect(sameOwner(legacy, legacy)).toBe(false);
    expect(sameOwner(legacy, claim)).toBe(false);
    expect(provenOwnerOf('team-a/build-1', key)).toBeUndefined();
  });

  it('matches only on kind, uid, namespace and name together', () => {
    expect(sameOwner(claim, { ...claim })).toBe(true);
    expect(sameOwner(claim, { ...claim, proven: true })).toBe(true);
    expect(sameOwner(claim, { ...claim, kind: 'Sandbox' })).toBe(false);
    expect(sameOwner(claim, { ...claim, uid: 'other-uid' })).toBe(false);
    expect(sameOwner(claim, { ...claim, namespace: 'team-b' })).toBe(false);
    expect(sameOwner(claim, { ...claim, name: 'build-2' })).toBe(false);
  });

  it('gives undefined for anything else', () => {
    for (const bad of [
      undefined,
      '',
      'sb_123',
      'nokind:uid:ns/n',
      `claim:${uid}`,
      `claim:${uid}:ns`,
      `claim::ns/n`,
      `claim:${uid}:NS/n`,
      `claim:${uid}:short:ns/n`,
      `claim:${uid}:${'A'.repeat(22)}:x:ns/n`,
      '/x',
      'ns/',
    ]) {
      expect(parseOwnerRef(bad, key)).toBeUndefined();
    }
  });

  it('serves the entry under the owner namespace/name and labels it with the owner name', () => {
    const ref = formatOwnerRef({ ...claim, kind: 'Sandbox' }, key);
    expect(servedNameOf(ref)).toBe('team-a/build-1');
    expect(servedNameOf('team-a/old')).toBe('team-a/old');
    expect(servedNameOf('junk')).toBeUndefined();
    expect(claimRefName(ref)).toBe('build-1');
    expect(sandboxLabelsFor('n1', { phase: 'Running', claimRef: ref })['sandbox.cocoonstack.io/claim']).toBe('build-1');
  });
});

describe('proof of authorship', () => {
  const fast: SandboxOwner = { kind: 'FastPathClaim', uid, namespace: 'victim', name: 'f1' };

  it('proves only a reference made with this key, unchanged', () => {
    const ref = formatOwnerRef(fast, key);
    expect(provenOwnerOf(ref, key)).toEqual({ ...fast, proven: true });
    // another control plane's key, or none at all
    expect(provenOwnerOf(ref, otherKey)).toBeUndefined();
    expect(parseOwnerRef(ref)).toEqual(fast);
    // every part is covered: namespace, name, uid, kind, and the renew flag
    const mac = ref.split(':')[2] ?? '';
    for (const forged of [
      ref.replace(':victim/', ':other/'),
      ref.replace('/f1', '/f2'),
      ref.replace(uid, uid.replace('0b3e', '0b3f')),
      ref.replace(/^fastclaim:/, 'claim:'),
      ref.replace(/^fastclaim:/, 'fastclaim+renew:'),
      ref.replace(mac, `${mac.slice(0, 21)}${mac.endsWith('A') ? 'B' : 'A'}`),
    ]) {
      expect(parseOwnerRef(forged, key)).toBeDefined();
      expect(provenOwnerOf(forged, key)).toBeUndefined();
    }
  });

  it('serves a reference without a MAC (an earlier release, or made up) but proves nothing of it', () => {
    const unsealed = `fastclaim:${uid}:victim/f1`;
    expect(parseOwnerRef(unsealed, key)).toEqual(fast);
    expect(servedNameOf(unsealed)).toBe('victim/f1');
    expect(provenOwnerOf(unsealed, key)).toBeUndefined();
  });

  it('the MAC is 128 bits of HMAC-SHA256 in base64url and depends on the key', () => {
    const a = formatOwnerRef(fast, key).split(':')[2];
    const b = formatOwnerRef(fast, otherKey).split(':')[2];
    expect(a).toMatch(new RegExp(`^${MAC}$`));
    expect(Buffer.from(a ?? '', 'base64url')).toHaveLength(16);
    expect(a).not.toBe(b);
    // deterministic: the same owner gives the same reference, which the node lists by
    expect(formatOwnerRef(fast, key)).toBe(formatOwnerRef(fast, key));
  });

  it('a key is base64 of at least 32 bytes', () => {
    const text = randomBytes(32).toString('base64');
    expect(OwnerRefKey.fromText(`${text}\n`).mac('x')).toBe(OwnerRefKey.fromText(text).mac('x'));
    for (const bad of ['', 'c2hvcnQ=', 'not base64!']) {
      expect(() => OwnerRefKey.fromText(bad)).toThrow();
      try {
        OwnerRefKey.fromText(bad);
      } catch (err) {
        expect(isInvalidOwnerRefKey(err)).toBe(true);
      }
    }
    expect(JSON.stringify({ key })).toBe('{"key":"[OwnerRefKey]"}');
  });
});

describe('a rotating keyring', () => {
  const fast: SandboxOwner = { kind: 'FastPathClaim', uid, namespace: 'victim', name: 'f1' };
  const k1 = randomBytes(32).toString('base64');
  const k2 = randomBytes(32).toString('base64url');

  it('the first line signs, every line verifies, a removed line stops verifying', () => {
    const old = OwnerRefKey.fromText(k1);
    const before = formatOwnerRef(fast, old);
    // the new key verifies only: what it signs is still made with the old one
    const adding = OwnerRefKey.fromText(`${k1}\n${k2}\n`);
    expect(formatOwnerRef(fast, adding)).toBe(before);
    const signing = OwnerRefKey.fromText(`  ${k2}\n\n${k1}  `);
    const after = formatOwnerRef(fast, signing);
    expect(after).not.toBe(before);
    expect(provenOwnerOf(before, signing)).toBeDefined();
    expect(provenOwnerOf(after, signing)).toBeDefined();
    expect(provenOwnerOf(after, old)).toBeUndefined();
    const done = OwnerRefKey.fromText(k2);
    expect(provenOwnerOf(after, done)).toBeDefined();
    expect(provenOwnerOf(before, done)).toBeUndefined();
  });

  it('replaceWith swaps the keys for every holder of the object', () => {
    const held = OwnerRefKey.fromText(k1);
    const before = formatOwnerRef(fast, held);
    held.replaceWith(OwnerRefKey.fromText(`${k2}\n${k1}`));
    expect(formatOwnerRef(fast, held)).not.toBe(before);
    expect(provenOwnerOf(before, held)).toBeDefined();
    held.replaceWith(OwnerRefKey.fromText(k2));
    expect(provenOwnerOf(before, held)).toBeUndefined();
  });

  it('ids name each key by a hash, signing key first, the same for the same key however written', () => {
    const ring = OwnerRefKey.fromText(`${k2}\n${k1}`);
    expect(ring.ids).toHaveLength(2);
    expect(ring.ids[0]).toMatch(/^[0-9a-f]{12}$/);
    expect(ring.ids[1]).toBe(OwnerRefKey.fromText(Buffer.from(k1, 'base64').toString('base64url')).ids[0]);
    expect(ring.ids.join('')).not.toContain(k1.slice(0, 8));
  });

  it('one bad line refuses the whole ring, as does a ring of more than 8', () => {
    for (const bad of [
      `${k1}\nc2hvcnQ=`,
      `${k1}\nnot base64!`,
      Array.from({ length: 9 }, () => randomBytes(32).toString('base64')).join('\n'),
    ]) {
      try {
        OwnerRefKey.fromText(bad);
        throw new Error(`accepted ${bad.length} characters`);
      } catch (err) {
        expect(isInvalidOwnerRefKey(err)).toBe(true);
      }
    }
  });
});

describe('served names', () => {
  it('serve a fork child under a valid object name', () => {
    const ref = `${formatOwnerRefPrefix({ kind: 'ForkChild', uid: 'u1', namespace: 'team-a', name: 'agent-' }, key)}sb_12`;
    expect(servedNameOf(ref)).toBe('team-a/agent-sb-12');
    expect(servedObjectName('sb_3')).toBe('sb-3');
    expect(servedObjectName('plain.name-1')).toBe('plain.name-1');
  });
});

describe('renewed owners', () => {
  it('round-trip the renew flag, which is not part of the identity', () => {
    const sb: SandboxOwner = { kind: 'Sandbox', uid, namespace: 'team-a', name: 'agent-1', renewed: true };
    const ref = formatOwnerRef(sb, key);
    expect(ref).toMatch(new RegExp(`^sandbox\\+renew:${uid}:${MAC}:team-a/agent-1$`));
    expect(parseOwnerRef(ref, key)).toEqual({ ...sb, proven: true });
    expect(sameOwner(parseOwnerRef(ref), { ...sb, renewed: false })).toBe(true);
    expect(parseOwnerRef(formatOwnerRef({ ...sb, renewed: false }, key))).not.toHaveProperty('renewed');
    expect(parseOwnerRef(`bogus+renew:${uid}:team-a/x`)).toBeUndefined();
    expect(servedNameOf(ref)).toBe('team-a/agent-1');
  });
});

import {
  formatOwnerRef,
  formatOwnerRefPrefix,
  isInvalidOwnerRef,
  parseOwnerRef,
  sameOwner,
  servedNameOf,
  servedObjectName,
  type SandboxOwner,
} from './owner-ref';
import { claimRefName, sandboxLabelsFor } from '../synthesis/synthesize-sandbox';

const uid = '0b3e6f0c-2d7a-4a55-9c51-6a0f3f1d2e4b';
const claim: SandboxOwner = { kind: 'SandboxClaim', uid, namespace: 'team-a', name: 'build-1' };

describe('owner references', () => {
  it('formats kind, uid, namespace and name readably and parses them back', () => {
    const ref = formatOwnerRef(claim);
    expect(ref).toBe(`claim:${uid}:team-a/build-1`);
    expect(parseOwnerRef(ref)).toEqual(claim);
    for (const kind of ['FastPathClaim', 'Sandbox', 'ForkChild', 'SnapshotClaim'] as const) {
      expect(parseOwnerRef(formatOwnerRef({ ...claim, kind }))).toEqual({ ...claim, kind });
    }
  });

  it('a fork prefix plus the child id the node appends names the child', () => {
    const prefix = formatOwnerRefPrefix({ kind: 'ForkChild', uid, namespace: 'team-a', name: 'parent-' });
    expect(parseOwnerRef(`${prefix}sb_0123456789abcdef`)).toEqual({
      kind: 'ForkChild',
      uid,
      namespace: 'team-a',
      name: 'parent-sb_0123456789abcdef',
    });
  });

  it('fits the longest namespace and name', () => {
    const long = { ...claim, namespace: 'n'.repeat(63), name: 'x'.repeat(253) };
    const ref = formatOwnerRef(long);
    expect(ref.length).toBeLessThanOrEqual(392);
    expect(parseOwnerRef(ref)).toEqual(long);
  });

  it('refuses to format an owner that would not parse back', () => {
    expect(() => formatOwnerRef({ ...claim, name: 'a/b' })).toThrow();
    expect(() => formatOwnerRef({ ...claim, uid: 'x:y' })).toThrow();
    try {
      formatOwnerRef({ ...claim, namespace: 'Bad_NS' });
    } catch (err) {
      expect(isInvalidOwnerRef(err)).toBe(true);
    }
    expect(() => formatOwnerRef({ ...claim, namespace: 'Bad_NS' })).toThrow(/DNS label/);
  });

  it('reads an old ns/name reference as legacy, which owns nothing', () => {
    const legacy = parseOwnerRef('team-a/build-1');
    expect(legacy).toEqual({ kind: 'legacy', namespace: 'team-a', name: 'build-1' });
    expect(sameOwner(legacy, legacy)).toBe(false);
    expect(sameOwner(legacy, claim)).toBe(false);
  });

  it('matches only on kind, uid, namespace and name together', () => {
    expect(sameOwner(claim, { ...claim })).toBe(true);
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
      '/x',
      'ns/',
    ]) {
      expect(parseOwnerRef(bad)).toBeUndefined();
    }
  });

  it('serves the entry under the owner namespace/name and labels it with the owner name', () => {
    const ref = formatOwnerRef({ ...claim, kind: 'Sandbox' });
    expect(servedNameOf(ref)).toBe('team-a/build-1');
    expect(servedNameOf('team-a/old')).toBe('team-a/old');
    expect(servedNameOf('junk')).toBeUndefined();
    expect(claimRefName(ref)).toBe('build-1');
    expect(sandboxLabelsFor('n1', { phase: 'Running', claimRef: ref })['sandbox.cocoonstack.io/claim']).toBe('build-1');
  });
});

describe('served names', () => {
  it('serve a fork child under a valid object name', () => {
    const ref = `${formatOwnerRefPrefix({ kind: 'ForkChild', uid: 'u1', namespace: 'team-a', name: 'agent-' })}sb_12`;
    expect(servedNameOf(ref)).toBe('team-a/agent-sb-12');
    expect(servedObjectName('sb_3')).toBe('sb-3');
    expect(servedObjectName('plain.name-1')).toBe('plain.name-1');
  });
});

describe('renewed owners', () => {
  it('round-trip the renew flag, which is not part of the identity', () => {
    const sb: SandboxOwner = { kind: 'Sandbox', uid, namespace: 'team-a', name: 'agent-1', renewed: true };
    const ref = formatOwnerRef(sb);
    expect(ref).toBe(`sandbox+renew:${uid}:team-a/agent-1`);
    expect(parseOwnerRef(ref)).toEqual(sb);
    expect(sameOwner(parseOwnerRef(ref), { ...sb, renewed: false })).toBe(true);
    expect(parseOwnerRef(formatOwnerRef({ ...sb, renewed: false }))).not.toHaveProperty('renewed');
    expect(parseOwnerRef(`bogus+renew:${uid}:team-a/x`)).toBeUndefined();
    expect(servedNameOf(ref)).toBe('team-a/agent-1');
  });
});

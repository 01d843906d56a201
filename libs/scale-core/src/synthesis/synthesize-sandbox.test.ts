import { parseFieldSelector, fieldSelectorMatches } from '../selectors/field-selector';
import { labelSelectorMatches, parseLabelSelector } from '../selectors/label-selector';
import { sandboxUid } from '../hash/stable-uid';
import { formatRfc3339Seconds, normalizeTimestamp } from './rfc3339';
import {
  claimRefName,
  compareByNamespaceName,
  entryFingerprint,
  readyConditionFor,
  sandboxFieldSet,
  splitEntryName,
  synthesizeSandbox,
  type EntryLike,
} from './synthesize-sandbox';

const entry = (e: Partial<EntryLike> & { name: string }): EntryLike => ({ phase: 'Running', ...e });
const opts = { resourceVersion: '42' };

describe('splitEntryName', () => {
  it('splits at the first slash', () => {
    expect(splitEntryName('a/b/c')).toEqual({ namespace: 'a', name: 'b/c' });
    expect(splitEntryName('ns/s1')).toEqual({ namespace: 'ns', name: 's1' });
  });

  it('puts a name without a slash in namespace default', () => {
    expect(splitEntryName('s1')).toEqual({ namespace: 'default', name: 's1' });
  });

  it('takes the name part of a claimRef', () => {
    expect(claimRefName('ns/claim-1')).toBe('claim-1');
    expect(claimRefName('claim-1')).toBe('claim-1');
    expect(claimRefName('ns/')).toBe('');
  });
});

describe('synthesizeSandbox', () => {
  it('synthesizes status, labels and annotations of a running entry', () => {
    const s = synthesizeSandbox('n1', entry({ name: 'ns/s1', id: 'sb_abc123', claimRef: 'ns/claim-1', addr: '10.1.2.3:7777' }), opts);
    expect(s.apiVersion).toBe('agents.x-k8s.io/v1beta1');
    expect(s.kind).toBe('Sandbox');
    expect(s.metadata).toMatchObject({ namespace: 'ns', name: 's1', resourceVersion: '42', generation: 1 });
    expect(s.status.podIPs).toEqual(['10.1.2.3']);
    expect(s.status.nodeName).toBe('n1');
    expect(s.metadata.labels).toEqual({
      'sandbox.cocoonstack.io/node': 'n1',
      'sandbox.cocoonstack.io/phase': 'Running',
      'sandbox.cocoonstack.io/claim': 'claim-1',
    });
    expect(s.metadata.annotations).toEqual({ 'sandbox.cocoonstack.io/claim-id': 'sb_abc123' });
    expect(s.status.conditions).toEqual([
      {
        type: 'Ready',
        status: 'True',
        reason: 'Running',
        message: 'sandbox phase "Running" reported by node "n1"',
        lastTransitionTime: null,
      },
    ]);
    expect(s.spec).toEqual({});
  });

  it('stamps the claim-id annotation only when the entry has an id, and omits an empty map', () => {
    expect(synthesizeSandbox('n1', entry({ name: 'ns/a', id: 'sb_abc' }), opts).metadata.annotations).toEqual({
      'sandbox.cocoonstack.io/claim-id': 'sb_abc',
    });
    const bare = synthesizeSandbox('n1', entry({ name: 'ns/b' }), opts);
    expect(bare.metadata.annotations).toBeUndefined();
    expect('annotations' in bare.metadata).toBe(false);
  });

  it('stamps the deadline as RFC3339 UTC seconds, and no annotation without one', () => {
    const withDeadline = synthesizeSandbox('n1', entry({ name: 'ns/a', deadline: '2026-08-17T12:00:00Z' }), opts);
    expect(withDeadline.metadata.annotations?.['sandbox.cocoonstack.io/deadline']).toBe('2026-08-17T12:00:00Z');
    const offset = synthesizeSandbox('n1', entry({ name: 'ns/a', deadline: '2026-08-17T14:00:00.900+02:00' }), opts);
    expect(offset.metadata.annotations?.['sandbox.cocoonstack.io/deadline']).toBe('2026-08-17T12:00:00Z');
    expect(synthesizeSandbox('n1', entry({ name: 'ns/a' }), opts).metadata.annotations).toBeUndefined();
    expect(synthesizeSandbox('n1', entry({ name: 'ns/a', deadline: '0001-01-01T00:00:00Z' }), opts).metadata.annotations).toBeUndefined();
  });

  it('changes the content fingerprint when the deadline or phase changes', () => {
    const base = entry({ name: 'ns/a', id: 'sb_1' });
    expect(entryFingerprint({ ...base, deadline: '2026-08-17T12:00:00Z' })).not.toBe(entryFingerprint(base));
    expect(entryFingerprint({ ...base, phase: 'Paused' })).not.toBe(entryFingerprint(base));
    expect(entryFingerprint({ ...base })).toBe(entryFingerprint(base));
  });

  it('fingerprints exactly as the reference resourceVersion: FNV-1a 64 of the documented string', () => {
    const e = entry({ name: 'ns/s1', id: 'sb_abc123', claimRef: 'ns/claim-1', addr: '10.1.2.3:7777', deadline: '2026-08-17T12:00:00Z' });
    // Golden value computed once, independently, over "ns/s1|sb_abc123|Running|ns/claim-1|10.1.2.3:7777|2026-08-17T12:00:00Z".
    expect(entryFingerprint(e)).toBe('16447397044017641858');
    expect(entryFingerprint({ ...e, deadline: undefined })).toBe('9508761922347906533');
  });

  it('leaves the node out of the fingerprint but not out of the uid', () => {
    const e = entry({ name: 'ns/s1', id: 'sb_1' });
    expect(entryFingerprint(e)).toBe(entryFingerprint({ ...e }));
    expect(synthesizeSandbox('n1', e, opts).metadata.uid).not.toBe(synthesizeSandbox('n2', e, opts).metadata.uid);
  });

  it('gives a uid that the Create response can compute too, stable across reads', () => {
    const e = entry({ name: 'ns/s1', id: 'sb_1', phase: 'Pending' });
    const first = synthesizeSandbox('n1', e, { resourceVersion: '1' });
    const later = synthesizeSandbox('n1', { ...e, phase: 'Running' }, { resourceVersion: '9' });
    expect(first.metadata.uid).toBe(later.metadata.uid);
    expect(first.metadata.uid).toBe(sandboxUid('n1', 'sb_1'));
  });

  it('takes creationTimestamp from the grant time, else the caller fallback, else null', () => {
    expect(
      synthesizeSandbox('n1', entry({ name: 'a', claimedAt: '2026-07-06T00:00:00.5Z' }), {
        ...opts,
        fallbackCreationTimestamp: '2026-01-01T00:00:00Z',
      }).metadata.creationTimestamp,
    ).toBe('2026-07-06T00:00:00Z');
    expect(
      synthesizeSandbox('n1', entry({ name: 'a' }), { ...opts, fallbackCreationTimestamp: new Date('2026-01-01T00:00:00Z') }).metadata
        .creationTimestamp,
    ).toBe('2026-01-01T00:00:00Z');
    expect(synthesizeSandbox('n1', entry({ name: 'a' }), opts).metadata.creationTimestamp).toBeNull();
  });

  it('uses the caller resourceVersion verbatim, never a hash', () => {
    expect(synthesizeSandbox('n1', entry({ name: 'a' }), { resourceVersion: '1000' }).metadata.resourceVersion).toBe('1000');
  });

  it('has no podIPs without an address, and no phase or claim labels when they are empty', () => {
    const s = synthesizeSandbox('n1', entry({ name: 'a', phase: '', claimRef: 'ns/' }), opts);
    expect('podIPs' in s.status).toBe(false);
    expect(s.metadata.labels).toEqual({ 'sandbox.cocoonstack.io/node': 'n1' });
  });

  it('never carries a token', () => {
    const s = synthesizeSandbox('n1', { ...entry({ name: 'a', id: 'sb_1' }), token: 'secret' } as EntryLike, opts);
    expect(JSON.stringify(s)).not.toContain('secret');
  });
});

describe('compareByNamespaceName', () => {
  it('orders a flattened fleet by namespace then name', () => {
    const items = [
      synthesizeSandbox('n1', entry({ name: 'ns-a/s1' }), opts),
      synthesizeSandbox('n1', entry({ name: 'ns-b/s2', phase: 'Pending' }), opts),
      synthesizeSandbox('n2', entry({ name: 'ns-a/s3' }), opts),
    ].sort(compareByNamespaceName);
    expect(items.map((s) => `${s.metadata.namespace}/${s.metadata.name}`)).toEqual(['ns-a/s1', 'ns-a/s3', 'ns-b/s2']);
    expect(items[0]?.status.nodeName).toBe('n1');
    expect(items[0]?.metadata.labels['sandbox.cocoonstack.io/node']).toBe('n1');
    expect(items[1]?.status.nodeName).toBe('n2');
  });

  it('compares code units, so upper case sorts before lower case whatever the locale', () => {
    const names = ['b', 'B', 'a', 'é', 'Z'].map((n) => ({ metadata: { namespace: 'ns', name: n } }));
    expect(names.sort(compareByNamespaceName).map((x) => x.metadata.name)).toEqual(['B', 'Z', 'a', 'b', 'é']);
  });
});

describe('readyConditionFor', () => {
  it.each([
    ['Running', 'True', 'Running'],
    ['running', 'True', 'running'],
    ['READY', 'True', 'READY'],
    ['Pending', 'False', 'Pending'],
    ['Hibernated', 'False', 'Hibernated'],
    ['', 'False', 'Unknown'],
  ])('phase %p -> status %s, reason %s', (phase, status, reason) => {
    const c = readyConditionFor('n1', phase);
    expect(c).toMatchObject({ type: 'Ready', status, reason, lastTransitionTime: null });
    expect(c.message).toContain(JSON.stringify(phase));
    expect(c.message).toContain('"n1"');
  });
});

describe('selectors over synthesized sandboxes', () => {
  const items = [
    synthesizeSandbox('n1', entry({ name: 'ns/running', phase: 'Running' }), opts),
    synthesizeSandbox('n2', entry({ name: 'ns/pending', phase: 'Pending' }), opts),
    synthesizeSandbox('n1', entry({ name: 'ns/b', phase: 'Running' }), opts),
  ];
  const byLabels = (sel: string): string[] =>
    items.filter((s) => labelSelectorMatches(parseLabelSelector(sel), s.metadata.labels)).map((s) => s.metadata.name);
  const byFields = (sel: string): string[] =>
    items.filter((s) => fieldSelectorMatches(parseFieldSelector(sel), sandboxFieldSet(s))).map((s) => s.metadata.name);

  it('selects by phase and node labels', () => {
    expect(byLabels('sandbox.cocoonstack.io/phase=Running')).toEqual(['running', 'b']);
    expect(byLabels('sandbox.cocoonstack.io/node=n2')).toEqual(['pending']);
    expect(byLabels('sandbox.cocoonstack.io/phase in (Pending),sandbox.cocoonstack.io/node!=n1')).toEqual(['pending']);
  });

  it('selects by metadata.name and status.nodeName fields', () => {
    expect(byFields('metadata.name=b')).toEqual(['b']);
    expect(byFields('status.nodeName=n2')).toEqual(['pending']);
    expect(byFields('metadata.namespace=ns,status.nodeName!=n2')).toEqual(['running', 'b']);
  });
});

describe('RFC3339 helpers', () => {
  it('truncates sub-seconds instead of rounding', () => {
    expect(formatRfc3339Seconds(new Date('2026-08-17T11:59:59.999Z'))).toBe('2026-08-17T11:59:59Z');
  });

  it('treats absent, unparsable and Go zero times as unset', () => {
    expect(normalizeTimestamp(undefined)).toBe('');
    expect(normalizeTimestamp('')).toBe('');
    expect(normalizeTimestamp('soon')).toBe('');
    expect(normalizeTimestamp('0001-01-01T00:00:00Z')).toBe('');
    expect(normalizeTimestamp('2026-08-17T12:00:00Z')).toBe('2026-08-17T12:00:00Z');
  });

  it('answers the same for a string already in RFC3339 seconds as through Date', () => {
    const slow = (v: string): string => normalizeTimestamp(new Date(v));
    for (const v of [
      '2026-08-17T12:00:00Z',
      '2026-02-28T23:59:59Z',
      '2026-02-31T00:00:00Z',
      '2024-02-29T00:00:00Z',
      '0001-01-01T00:00:01Z',
      '1970-01-01T00:00:00Z',
      '2030-12-31T23:59:59Z',
    ]) {
      expect(normalizeTimestamp(v)).toBe(slow(v));
    }
    expect(normalizeTimestamp('0000-12-31T00:00:00Z')).toBe('');
    expect(normalizeTimestamp('2026-02-31T00:00:00Z')).toBe('2026-03-03T00:00:00Z');
  });
});

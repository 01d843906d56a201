import { statusErrorOf, synthesizeSandbox, type ServedSandbox } from '@sandbox-scale/scale-core';
import { applySandboxPatch, PATCH_TYPES } from './patch-sandbox';
import { decorate, entriesOf } from './user-metadata';

const base = synthesizeSandbox(
  'node-a',
  { name: 'team-a/s1', id: 'sb_1', phase: 'Running', addr: '10.0.0.5:7777' },
  { resourceVersion: '7' },
);
const served: ServedSandbox = decorate(base, { uid: base.metadata.uid, labels: { team: 'a' }, annotations: { note: 'x' } });

const statusOf = (fn: () => unknown): { code?: number; message?: string; causes?: Array<{ field?: string }> } => {
  try {
    fn();
  } catch (err) {
    const e = statusErrorOf(err);
    return { code: e?.code, message: e?.message, causes: e?.details.causes?.map((c) => ({ ...(c.field ? { field: c.field } : {}) })) };
  }
  throw new Error('no error');
};

describe('applySandboxPatch', () => {
  it("merge patch: sets and removes labels and annotations, keeping the server's own", () => {
    const out = applySandboxPatch(served, PATCH_TYPES.merge, {
      metadata: { labels: { env: 'prod', team: null }, annotations: { owner: 'me' } },
    });
    expect(out.metadata).toEqual({ labels: { env: 'prod' }, annotations: { note: 'x', owner: 'me' } });
    expect(out.operatingMode).toBeUndefined();
  });

  it('JSON patch: add, replace and remove under metadata.labels (keys escaped with ~1)', () => {
    const out = applySandboxPatch(served, PATCH_TYPES.json, [
      { op: 'add', path: '/metadata/labels/example.com~1tier', value: 'gold' },
      { op: 'replace', path: '/metadata/labels/team', value: 'b' },
      { op: 'remove', path: '/metadata/annotations/note' },
    ]);
    expect(out.metadata).toEqual({ labels: { 'example.com/tier': 'gold', team: 'b' }, annotations: {} });
  });

  it('strategic merge patch reads as a merge patch on these maps; its directives are refused', () => {
    expect(applySandboxPatch(served, PATCH_TYPES.strategic, { metadata: { labels: { env: 'dev' } } }).metadata.labels).toEqual({
      team: 'a',
      env: 'dev',
    });
    expect(statusOf(() => applySandboxPatch(served, PATCH_TYPES.strategic, { metadata: { $patch: 'replace' } })).code).toBe(400);
  });

  it('maps spec.operatingMode to a mode, and refuses another value', () => {
    expect(applySandboxPatch(served, PATCH_TYPES.merge, { spec: { operatingMode: 'Suspended' } }).operatingMode).toBe('Suspended');
    const bad = statusOf(() => applySandboxPatch(served, PATCH_TYPES.merge, { spec: { operatingMode: 'Paused' } }));
    expect(bad.code).toBe(422);
    expect(bad.causes?.map((c) => c.field)).toEqual(['spec.operatingMode']);
  });

  it('refuses any other field with a 422 naming each one and saying what may change', () => {
    const r = statusOf(() =>
      applySandboxPatch(served, PATCH_TYPES.merge, { spec: { shutdownTime: '2030-01-01T00:00:00Z' }, status: { nodeName: 'elsewhere' } }),
    );
    expect(r.code).toBe(422);
    expect(r.causes?.map((c) => c.field).sort()).toEqual(['spec.shutdownTime', 'status.nodeName']);
    expect(r.message).toContain('metadata.labels, metadata.annotations and spec.operatingMode');
  });

  it("refuses changes to the server's keys and malformed keys or values", () => {
    expect(
      statusOf(() => applySandboxPatch(served, PATCH_TYPES.merge, { metadata: { labels: { 'sandbox.cocoonstack.io/node': 'n9' } } }))
        .causes?.[0]?.field,
    ).toBe('metadata.labels[sandbox.cocoonstack.io/node]');
    expect(
      statusOf(() => applySandboxPatch(served, PATCH_TYPES.merge, { metadata: { labels: { 'sandbox.cocoonstack.io/node': null } } })).code,
    ).toBe(422);
    expect(statusOf(() => applySandboxPatch(served, PATCH_TYPES.merge, { metadata: { labels: { 'bad key!': 'v' } } })).code).toBe(422);
    expect(statusOf(() => applySandboxPatch(served, PATCH_TYPES.merge, { metadata: { labels: { ok: 'not a valid value!' } } })).code).toBe(
      422,
    );
    expect(statusOf(() => applySandboxPatch(served, PATCH_TYPES.merge, { metadata: { annotations: { ok: 5 } } })).code).toBe(422);
  });

  it('is a 409 when the patch names another resourceVersion', () => {
    expect(
      statusOf(() => applySandboxPatch(served, PATCH_TYPES.merge, { metadata: { resourceVersion: '6', labels: { a: 'b' } } })).code,
    ).toBe(409);
    expect(
      applySandboxPatch(served, PATCH_TYPES.merge, { metadata: { resourceVersion: '7', labels: { a: 'b' } } }).metadata.labels,
    ).toEqual({ team: 'a', a: 'b' });
  });
});

describe('decorate', () => {
  it("adds the user's labels and annotations to the served object of the same uid only; the server's keys win", () => {
    const d = decorate(base, { uid: base.metadata.uid, labels: { team: 'a', 'sandbox.cocoonstack.io/node': 'fake' }, annotations: {} });
    expect(d.metadata.labels).toEqual({ ...base.metadata.labels, team: 'a' });
    expect(decorate(base, { uid: 'another', labels: { team: 'a' }, annotations: {} })).toBe(base);
  });

  it('reads the entries of a namespace ConfigMap, skipping a value that does not parse', () => {
    const m = entriesOf({ data: { s1: JSON.stringify({ uid: 'u1', labels: { a: 'b' } }), s2: 'not json' } });
    expect([...m.entries()]).toEqual([['s1', { uid: 'u1', labels: { a: 'b' }, annotations: {} }]]);
  });
});

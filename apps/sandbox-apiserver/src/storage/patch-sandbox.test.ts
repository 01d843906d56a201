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
    const r = statusOf(() => applySandboxPatch(served, PATCH_TYPES.merge, { spec: { replicas: 2 }, status: { nodeName: 'elsewhere' } }));
    expect(r.code).toBe(422);
    expect(r.causes?.map((c) => c.field).sort()).toEqual(['spec.replicas', 'status.nodeName']);
    expect(r.message).toContain('metadata.labels, metadata.annotations and spec.operatingMode');
  });

  it('hands back the create-time spec fields and reserved annotations a patch repeats, for the caller to check against the create', () => {
    const podTemplate = { spec: { containers: [{ name: 'agent', image: 'img:1' }] } };
    const r = applySandboxPatch(served, PATCH_TYPES.merge, {
      metadata: { annotations: { 'sandbox.cocoonstack.io/net': 'egress' } },
      spec: { podTemplate, shutdownTime: '2030-01-01T00:00:00Z' },
    });
    expect(r.createTimeSpec).toEqual({ podTemplate, shutdownTime: '2030-01-01T00:00:00Z' });
    expect(r.createTimeAnnotations).toEqual({ 'sandbox.cocoonstack.io/net': 'egress' });
    // not user metadata: it is the create's ask, never stored as an annotation
    expect(r.metadata.annotations).not.toHaveProperty('sandbox.cocoonstack.io/net');
    expect(r.managedFields).toBeUndefined();
  });

  it('hands back metadata.managedFields only when the patch rewrites them', () => {
    const mf = [{ manager: 'kubectl', operation: 'Apply', fieldsType: 'FieldsV1', fieldsV1: {} }];
    expect(applySandboxPatch(served, PATCH_TYPES.json, [{ op: 'add', path: '/metadata/managedFields', value: mf }]).managedFields).toEqual(
      mf,
    );
    expect(applySandboxPatch(served, PATCH_TYPES.merge, { metadata: { labels: { a: 'b' } } }).managedFields).toBeUndefined();
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

describe('applySandboxPatch and keys that name a prototype', () => {
  const PROTO_PATHS = [
    '/__proto__/polluted',
    '/metadata/__proto__/polluted',
    '/metadata/labels/__proto__',
    '/constructor/prototype/polluted',
    '/metadata/labels/constructor',
    '/spec/prototype',
    '/status/conditions/0/__proto__/x',
  ];

  afterEach(() => {
    // nothing any case below sent may be left on a prototype
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(Object.keys(Object.prototype)).toEqual([]);
  });

  it.each(['add', 'replace', 'remove', 'test', 'copy', 'move'])(
    'JSON patch %s refuses every path through one with a 422 naming the path',
    (op) => {
      for (const path of PROTO_PATHS) {
        const body = { op, path, value: 'yes', from: '/metadata/labels/team' };
        const r = statusOf(() => applySandboxPatch(served, PATCH_TYPES.json, [body]));
        expect({ path, code: r.code }).toEqual({ path, code: 422 });
        expect(r.causes?.[0]?.field).toBe(path);
      }
    },
  );

  it('refuses one as the source of a copy or a move too', () => {
    for (const op of ['copy', 'move']) {
      const r = statusOf(() => applySandboxPatch(served, PATCH_TYPES.json, [{ op, from: '/__proto__', path: '/metadata/labels/x' }]));
      expect(r.code).toBe(422);
      expect(r.causes?.[0]?.field).toBe('/__proto__');
    }
  });

  it('refuses one escaped, or reached through an array index that is not a plain number', () => {
    // ~0 and ~1 unescape before the check; "01" and "length" are not indexes
    expect(
      statusOf(() => applySandboxPatch(served, PATCH_TYPES.json, [{ op: 'add', path: '/metadata/__proto__~1x', value: 1 }])).code,
    ).toBe(422);
    const arr = statusOf(() => applySandboxPatch(served, PATCH_TYPES.json, [{ op: 'remove', path: '/status/conditions/length' }]));
    expect(arr.code).toBe(422);
  });

  it('refuses one as a key of a value, at any depth, in JSON, merge and strategic patches', () => {
    const value = JSON.parse('{"a":{"b":[{"__proto__":{"polluted":"yes"}}]}}') as unknown;
    const json = statusOf(() => applySandboxPatch(served, PATCH_TYPES.json, [{ op: 'add', path: '/metadata/annotations/x', value }]));
    expect(json.code).toBe(422);
    expect(json.causes?.[0]?.field).toBe('[0].value.a.b[0].__proto__');
    for (const type of [PATCH_TYPES.merge, PATCH_TYPES.strategic]) {
      for (const text of [
        '{"__proto__":{"polluted":"yes"}}',
        '{"metadata":{"labels":{"constructor":"x"}}}',
        '{"metadata":{"prototype":{}}}',
      ]) {
        const r = statusOf(() => applySandboxPatch(served, type, JSON.parse(text) as unknown));
        expect({ text, code: r.code }).toEqual({ text, code: 422 });
      }
    }
  });

  it('never reads an inherited member: a path to toString or hasOwnProperty does not exist', () => {
    const r = statusOf(() => applySandboxPatch(served, PATCH_TYPES.json, [{ op: 'remove', path: '/metadata/toString' }]));
    expect(r.code).toBe(422);
    expect(r.message).toContain('does not exist');
    const t = statusOf(() => applySandboxPatch(served, PATCH_TYPES.json, [{ op: 'add', path: '/metadata/hasOwnProperty/x', value: 1 }]));
    expect(t.code).toBe(422);
  });
});

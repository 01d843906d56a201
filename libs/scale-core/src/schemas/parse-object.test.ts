import { statusForError } from '../errors/status-for-error';
import { isInvalidError } from '../errors/status-errors';
import { poolKeyFor } from '../pool-key/pool-key';
import { inventoryRow, NodeInventorySchema } from './node-inventory';
import { formatFieldPath, ObjectValidationError, parseObject, tryParseObject } from './parse-object';
import { SandboxSchema } from './sandbox';
import { SandboxClaimSchema } from './sandbox-claim';
import { SandboxTemplateSchema } from './sandbox-template';
import { SandboxWarmPoolSchema } from './sandbox-warm-pool';

const pool = (spec: Record<string, unknown>): unknown => ({
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'SandboxWarmPool',
  metadata: { name: 'p', namespace: 'ns', generation: 2 },
  spec,
});

function expectInvalid(schema: Parameters<typeof parseObject>[0], obj: unknown): ObjectValidationError {
  const r = tryParseObject(schema, obj);
  if (r.ok) throw new Error('expected the object to be rejected');
  return r.error;
}

describe('parseObject', () => {
  it('returns a typed SandboxWarmPool with defaults applied', () => {
    const p = parseObject(SandboxWarmPoolSchema, pool({ sandboxTemplateRef: { name: 'tpl' } }));
    expect(p.spec.replicas).toBe(1);
    expect(p.spec.sandboxTemplateRef.name).toBe('tpl');
    expect(p.metadata.generation).toBe(2);
  });

  it('keeps fields it does not model', () => {
    const p = parseObject(SandboxWarmPoolSchema, pool({ sandboxTemplateRef: { name: 'tpl' }, future: 'x' }));
    expect(p.spec['future']).toBe('x');
  });

  it('names spec.replicas when it is negative', () => {
    const err = expectInvalid(SandboxWarmPoolSchema, pool({ replicas: -1, sandboxTemplateRef: { name: 'tpl' } }));
    expect(err.issues).toEqual([expect.objectContaining({ field: 'spec.replicas', reason: 'FieldValueInvalid' })]);
    expect(err.message).toMatch(/^SandboxWarmPool\.extensions\.agents\.x-k8s\.io "p" is invalid: spec\.replicas: Invalid value: -1/);
    expect(isInvalidError(err)).toBe(true);
    expect(statusForError(err)).toMatchObject({ code: 422, reason: 'Invalid', details: { kind: 'SandboxWarmPool', name: 'p' } });
  });

  it('names a missing required field as Required value', () => {
    const err = expectInvalid(SandboxWarmPoolSchema, pool({ replicas: 2 }));
    expect(err.issues).toEqual([{ field: 'spec.sandboxTemplateRef', reason: 'FieldValueRequired', message: 'Required value' }]);
  });

  it('names a non-integer replicas', () => {
    const err = expectInvalid(SandboxWarmPoolSchema, pool({ replicas: 1.5, sandboxTemplateRef: { name: 'tpl' } }));
    expect(err.issues[0]?.field).toBe('spec.replicas');
  });

  it('reports every bad field at once', () => {
    const err = expectInvalid(SandboxWarmPoolSchema, pool({ replicas: 'many', updateStrategy: { type: 'Sometimes' } }));
    expect(err.issues.map((i) => i.field).sort()).toEqual(['spec.replicas', 'spec.sandboxTemplateRef', 'spec.updateStrategy.type']);
    expect(err.issues.find((i) => i.field === 'spec.updateStrategy.type')).toMatchObject({
      reason: 'FieldValueNotSupported',
      message: expect.stringContaining('"Recreate", "OnReplenish"'),
    });
  });

  it('rejects the wrong kind', () => {
    const err = expectInvalid(SandboxWarmPoolSchema, { ...(pool({ sandboxTemplateRef: { name: 't' } }) as object), kind: 'Pod' });
    expect(err.issues[0]?.field).toBe('kind');
  });

  it('indexes array elements in the field path', () => {
    const tpl = {
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'SandboxTemplate',
      metadata: { name: 't' },
      spec: { podTemplate: { spec: { containers: [{ name: 'a', image: 'img', resources: { requests: { cpu: 'lots' } } }] } } },
    };
    const err = expectInvalid(SandboxTemplateSchema, tpl);
    expect(err.issues[0]?.field).toBe('spec.podTemplate.spec.containers[0].resources.requests.cpu');
  });

  it('parses a template whose pool key the driver can compute', () => {
    const tpl = parseObject(SandboxTemplateSchema, {
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'SandboxTemplate',
      metadata: { name: 't', annotations: { 'sandbox.cocoonstack.io/net': 'egress' } },
      spec: {
        podTemplate: {
          spec: { containers: [{ name: 'a', image: 'img', resources: { requests: { cpu: 2, memory: '1Gi' } } }], restartPolicy: 'Never' },
        },
      },
    });
    expect(tpl.spec.networkPolicyManagement).toBe('Managed');
    expect(tpl.spec.podTemplate.spec['restartPolicy']).toBe('Never');
    expect(poolKeyFor(tpl.spec.podTemplate.spec.containers, tpl.metadata.annotations?.['sandbox.cocoonstack.io/net'])).toEqual({
      template: 'img',
      net: 'egress',
      size: 'medium',
    });
  });

  it('parses a Sandbox create body and names a missing podTemplate', () => {
    const ok = parseObject(SandboxSchema, {
      apiVersion: 'agents.x-k8s.io/v1beta1',
      kind: 'Sandbox',
      metadata: { generateName: 'sb-' },
      spec: { podTemplate: { spec: { containers: [{ name: 'c', image: 'img' }] } }, shutdownTime: '2026-08-17T12:00:00+02:00' },
    });
    expect(ok.spec.operatingMode).toBe('Running');
    expect(ok.spec.shutdownPolicy).toBe('Retain');
    const err = expectInvalid(SandboxSchema, { apiVersion: 'agents.x-k8s.io/v1beta1', kind: 'Sandbox', metadata: { name: 'x' }, spec: {} });
    expect(err.message).toBe('Sandbox.agents.x-k8s.io "x" is invalid: spec.podTemplate: Required value');
  });

  it('rejects a Sandbox shutdownTime that is not RFC3339', () => {
    const err = expectInvalid(SandboxSchema, {
      apiVersion: 'agents.x-k8s.io/v1beta1',
      kind: 'Sandbox',
      metadata: { name: 'x' },
      spec: { podTemplate: { spec: { containers: [{ name: 'c' }] } }, shutdownTime: 'tomorrow' },
    });
    expect(err.issues[0]?.field).toBe('spec.shutdownTime');
  });

  it('parses a SandboxClaim and its bound status', () => {
    const c = parseObject(SandboxClaimSchema, {
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'SandboxClaim',
      metadata: { name: 'c1', namespace: 'default' },
      spec: { warmPoolRef: { name: 'p' } },
      status: {
        sandbox: { name: 'c1', claimID: 'sb_1', podIPs: ['10.0.0.5'], nodeName: 'node-a', address: '10.0.0.5:7777' },
        conditions: [
          { type: 'Bound', status: 'True', reason: 'NodeLocalClaim', message: 'delivered', lastTransitionTime: '2026-07-06T00:00:00Z' },
        ],
      },
    });
    expect(c.status?.sandbox?.name).toBe('c1');
    expect(c.status?.sandbox?.claimID).toBe('sb_1');
    expect(c.status?.conditions?.[0]?.reason).toBe('NodeLocalClaim');
  });

  it('names a condition with a malformed reason', () => {
    const err = expectInvalid(SandboxClaimSchema, {
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'SandboxClaim',
      metadata: { name: 'c1' },
      spec: { warmPoolRef: { name: 'p' } },
      status: {
        conditions: [
          { type: 'Bound', status: 'Maybe', reason: 'no spaces allowed', message: '', lastTransitionTime: '2026-07-06T00:00:00Z' },
        ],
      },
    });
    expect(err.issues.map((i) => i.field).sort()).toEqual(['status.conditions[0].reason', 'status.conditions[0].status']);
  });
});

describe('NodeInventory schema', () => {
  const inv = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'NodeInventory',
    metadata: { name: 'n1' },
    node: 'n1',
    ...extra,
  });

  it('parses node, address, entries and pools', () => {
    const v = parseObject(
      NodeInventorySchema,
      inv({
        address: '10.0.0.2:7777',
        entries: [
          { name: 'ns/s1', id: 'sb_1', phase: 'Running', claimRef: 'ns/c1', addr: '10.1.2.3:7777', deadline: '2026-08-17T12:00:00Z' },
          { name: 's2', phase: '' },
        ],
        pools: [{ template: 'img', warm: 4, target: 5 }],
      }),
    );
    expect(v.entries).toHaveLength(2);
    expect(v.entries?.[1]?.phase).toBe('');
    expect(v.pools?.[0]).toEqual({ template: 'img', warm: 4, target: 5 });
  });

  it('requires phase on every entry, even if empty', () => {
    const err = expectInvalid(NodeInventorySchema, inv({ entries: [{ name: 'ns/a' }] }));
    expect(err.issues).toEqual([{ field: 'entries[0].phase', reason: 'FieldValueRequired', message: 'Required value' }]);
  });

  it('reads rows as the entries they hold, after any entries, and writes an entry back to the same row', () => {
    const full = {
      name: 'ns/s1',
      id: 'sb_1',
      phase: 'Running',
      claimRef: 'ns/c1',
      addr: '10.1.2.3:7777',
      deadline: '2026-08-17T12:00:00Z',
    };
    const bare = { name: 's2', phase: '' };
    expect(inventoryRow(full)).toBe('["ns/s1","sb_1","Running","ns/c1","10.1.2.3:7777","2026-08-17T12:00:00Z"]');
    expect(inventoryRow(bare)).toBe('["s2",null,""]');
    const v = parseObject(
      NodeInventorySchema,
      inv({ entries: [{ name: 'ns/old', phase: 'Paused' }], rows: [inventoryRow(full), inventoryRow(bare)] }),
    );
    expect(v.entries).toEqual([{ name: 'ns/old', phase: 'Paused' }, full, bare]);
    expect('rows' in v).toBe(false);
    expect(v.entries?.map(inventoryRow).slice(1)).toEqual([inventoryRow(full), inventoryRow(bare)]);
  });

  it('refuses a row that is no array of the entry fields, or whose field is invalid, naming the row and the field', () => {
    const fields = (rows: unknown[]): string[] => expectInvalid(NodeInventorySchema, inv({ rows })).issues.map((i) => i.field);
    expect(fields(['{"name":"ns/a","phase":""}'])).toEqual(['rows[0]']);
    expect(fields(['["ns/a"', '[]', '{}'])).toEqual(['rows[0]', 'rows[1]', 'rows[2]']);
    // a field a later publisher adds at the end is left alone
    const later = parseObject(NodeInventorySchema, inv({ rows: ['["ns/a","sb_1","Running",null,null,null,null,"later",{"x":1}]'] }));
    expect(later.entries).toEqual([{ name: 'ns/a', id: 'sb_1', phase: 'Running' }]);
    expect(fields(['["ns/a"]'])).toEqual(['rows[0].phase']);
    expect(fields(['["ns/a",null,"Running",null,null,"tomorrow"]'])).toEqual(['rows[0].deadline']);
    expect(fields(['["ns/a",7,"Running"]'])).toEqual(['rows[0].id']);
    expect(fields([7])).toEqual(['rows[0]']);
    // values land on the fields by position, so "__proto__" is a value like any other and never a key
    const v = parseObject(NodeInventorySchema, inv({ rows: ['["__proto__",null,"constructor"]'] }));
    expect(v.entries).toEqual([{ name: '__proto__', phase: 'constructor' }]);
    expect(Object.getPrototypeOf(v.entries?.[0])).toBe(Object.prototype);
  });

  it('requires node to equal metadata.name', () => {
    const err = expectInvalid(NodeInventorySchema, inv({ node: 'n2' }));
    expect(err.issues[0]).toMatchObject({ field: 'node', message: expect.stringContaining('must equal metadata.name "n1"') });
  });

  it('rejects negative warm counts', () => {
    const err = expectInvalid(NodeInventorySchema, inv({ pools: [{ template: 'img', warm: -1, target: 0 }] }));
    expect(err.issues[0]?.field).toBe('pools[0].warm');
  });
});

describe('formatFieldPath', () => {
  it('spells paths as Kubernetes does', () => {
    expect(formatFieldPath(['spec', 'containers', 0, 'image'])).toBe('spec.containers[0].image');
    expect(formatFieldPath(['metadata', 'annotations', 'sandbox.cocoonstack.io/net'])).toBe(
      'metadata.annotations[sandbox.cocoonstack.io/net]',
    );
    expect(formatFieldPath([])).toBe('');
  });
});

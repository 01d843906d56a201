import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { SandboxSchema } from '../schemas/sandbox';
import { buildCrds } from './build-crds';
import { CRD_OUTPUT_DIR, renderCrdFiles } from './render-crds';
import { toStructuralSchema, UnstructuralSchemaError, type SchemaNode } from './structural-schema';

const root = resolve(__dirname, '../../../..');
const crdDir = join(root, CRD_OUTPUT_DIR);

const isNode = (v: unknown): v is SchemaNode => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The structural-schema rules kube-apiserver enforces on apiextensions.k8s.io/v1 CRDs
 * (k8s.io/apiextensions-apiserver/pkg/apiserver/schema): every node typed unless int-or-string
 * or preserve-unknown, no junctors except the int-or-string pattern, no $ref, properties and
 * additionalProperties exclusive, no boolean additionalProperties, list-map keys required.
 */
function structuralProblems(node: unknown, path: string, out: string[]): string[] {
  if (!isNode(node)) return [...out, `${path}: not a schema object`];
  const intOrString = node['x-kubernetes-int-or-string'] === true;
  if (intOrString) {
    const anyOf = JSON.stringify(node['anyOf']);
    if (anyOf !== JSON.stringify([{ type: 'integer' }, { type: 'string' }]))
      out.push(`${path}: int-or-string must use anyOf [integer, string]`);
  } else {
    for (const j of ['anyOf', 'oneOf', 'allOf', 'not']) if (j in node) out.push(`${path}: ${j} is not allowed`);
    if (typeof node['type'] !== 'string' && node['x-kubernetes-preserve-unknown-fields'] !== true) out.push(`${path}: missing type`);
  }
  if ('$ref' in node) out.push(`${path}: $ref is not allowed`);
  if ('uniqueItems' in node) out.push(`${path}: uniqueItems is not allowed`);
  if (node['x-kubernetes-preserve-unknown-fields'] === false) out.push(`${path}: preserve-unknown-fields false is not allowed`);
  const props = node['properties'];
  const ap = node['additionalProperties'];
  if (props !== undefined && ap !== undefined) out.push(`${path}: properties and additionalProperties are exclusive`);
  if (typeof ap === 'boolean') out.push(`${path}: additionalProperties must be a schema`);
  if ((props !== undefined || ap !== undefined) && node['type'] !== 'object') out.push(`${path}: fields on a non-object`);
  if (node['type'] === 'array' && !isNode(node['items'])) out.push(`${path}: array without items`);
  if (node['x-kubernetes-list-type'] === 'map') {
    const items = node['items'] as SchemaNode;
    const required = (items['required'] as string[] | undefined) ?? [];
    for (const k of (node['x-kubernetes-list-map-keys'] as string[]) ?? [])
      if (!required.includes(k)) out.push(`${path}: list-map key ${k} must be required`);
  }
  if (isNode(props)) for (const [k, v] of Object.entries(props)) structuralProblems(v, `${path}.${k}`, out);
  if (isNode(ap)) structuralProblems(ap, `${path}[*]`, out);
  if (isNode(node['items'])) structuralProblems(node['items'], `${path}[]`, out);
  return out;
}

/** Every property below `spec`/`status`/the root fields of NodeInventory must explain itself. */
function undescribed(node: SchemaNode, path: string, out: string[]): string[] {
  const props = node['properties'];
  if (isNode(props)) {
    for (const [k, v] of Object.entries(props)) {
      const child = v as SchemaNode;
      if (k !== 'metadata' && typeof child['description'] !== 'string') out.push(`${path}.${k}`);
      undescribed(child, `${path}.${k}`, out);
    }
  }
  if (isNode(node['items'])) undescribed(node['items'], `${path}[]`, out);
  return out;
}

const crds = buildCrds();
const byName = new Map(crds.map((c) => [c.metadata.name, c]));
type Version = {
  name: string;
  schema: { openAPIV3Schema: SchemaNode };
  subresources?: SchemaNode;
  additionalPrinterColumns?: { name: string; jsonPath: string; priority?: number }[];
};
const spec = (name: string): { scope: string; names: SchemaNode; versions: Version[]; conversion: SchemaNode } => {
  const crd = byName.get(name);
  if (crd === undefined) throw new Error(`no CRD ${name}`);
  return crd['spec'] as never;
};
const schemaOf = (name: string): SchemaNode => {
  const v = spec(name).versions[0];
  if (v === undefined) throw new Error(`no version in ${name}`);
  return v.schema.openAPIV3Schema;
};
const at = (node: SchemaNode, path: string): SchemaNode =>
  path
    .split('.')
    .reduce<SchemaNode>((n, k) => (k === '[]' ? (n['items'] as SchemaNode) : ((n['properties'] as SchemaNode)[k] as SchemaNode)), node);

describe('generated CRDs', () => {
  it('match the committed YAML (run `npx nx run scale-core:crds` after changing a schema)', () => {
    const files = renderCrdFiles();
    const committed = readdirSync(crdDir)
      .filter((f) => f.endsWith('.yaml'))
      .sort();
    expect(committed).toEqual(files.map((f) => f.fileName).sort());
    for (const f of files) expect(readFileSync(join(crdDir, f.fileName), 'utf8')).toBe(f.content);
  });

  it('parse back from YAML into the same objects', () => {
    for (const f of renderCrdFiles()) {
      const obj = parse(f.content) as { metadata: { name: string } };
      expect(obj).toEqual(byName.get(obj.metadata.name));
    }
  });

  it('are the four extensions CRDs, v1beta1 only, served and stored, without conversion', () => {
    expect([...byName.keys()].sort()).toEqual([
      'nodeinventories.extensions.agents.x-k8s.io',
      'sandboxclaims.extensions.agents.x-k8s.io',
      'sandboxtemplates.extensions.agents.x-k8s.io',
      'sandboxwarmpools.extensions.agents.x-k8s.io',
    ]);
    for (const name of byName.keys()) {
      const s = spec(name);
      expect(s.versions.map((v) => [v.name, (v as unknown as SchemaNode)['served'], (v as unknown as SchemaNode)['storage']])).toEqual([
        ['v1beta1', true, true],
      ]);
      expect(s.conversion).toEqual({ strategy: 'None' });
    }
  });

  it.each(crds.map((c) => c.metadata.name))('%s has a structural schema', (name) => {
    expect(structuralProblems(schemaOf(name), '', [])).toEqual([]);
    expect(at(schemaOf(name), 'metadata')).toEqual({ type: 'object' });
  });

  it.each(crds.map((c) => c.metadata.name))('%s describes every field for kubectl explain', (name) => {
    expect(undescribed(schemaOf(name), '', [])).toEqual([]);
  });

  it.each(crds.map((c) => c.metadata.name))('%s is in the sandbox-scale category (kubectl get sandbox-scale)', (name) => {
    expect(spec(name).names['categories']).toEqual(['sandbox-scale']);
  });

  it('gives SandboxWarmPool status and scale subresources and validates replicas', () => {
    const s = spec('sandboxwarmpools.extensions.agents.x-k8s.io');
    expect(s.names['shortNames']).toEqual(['swp']);
    expect(s.versions[0]?.subresources).toEqual({
      status: {},
      scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' },
    });
    const schema = schemaOf('sandboxwarmpools.extensions.agents.x-k8s.io');
    expect(at(schema, 'spec.replicas')).toMatchObject({ type: 'integer', format: 'int32', minimum: 0, default: 1 });
    expect(at(schema, 'spec')['required']).toEqual(['sandboxTemplateRef']);
    expect(at(schema, 'spec.sandboxTemplateRef')['required']).toEqual(['name']);
    expect(at(schema, 'status.conditions')).toMatchObject({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] });
    expect(s.versions[0]?.additionalPrinterColumns?.map((c) => c.name)).toEqual(['Ready', 'Desired', 'Age']);
  });

  it('gives SandboxClaim a status subresource and Ready, Reason, Sandbox, Node and Age columns (Bound and ClaimID wide)', () => {
    const s = spec('sandboxclaims.extensions.agents.x-k8s.io');
    expect(s.versions[0]?.subresources).toEqual({ status: {} });
    const cols = s.versions[0]?.additionalPrinterColumns ?? [];
    expect(cols.map((c) => c.name)).toEqual(['Ready', 'Reason', 'Sandbox', 'Node', 'Bound', 'ClaimID', 'Age']);
    expect(cols[0]?.jsonPath).toBe('.status.conditions[?(@.type=="Ready")].status');
    expect(cols[1]?.jsonPath).toBe('.status.conditions[?(@.type=="Ready")].reason');
    expect(cols.filter((c) => c.priority === 1).map((c) => c.name)).toEqual(['Bound', 'ClaimID']);
    expect(at(schemaOf('sandboxclaims.extensions.agents.x-k8s.io'), 'status.sandbox.claimID')['type']).toBe('string');
    expect(at(schemaOf('sandboxclaims.extensions.agents.x-k8s.io'), 'spec')['required']).toEqual(['warmPoolRef']);
  });

  it('makes NodeInventory cluster-scoped, spec-less, with node required and equal to its name', () => {
    const s = spec('nodeinventories.extensions.agents.x-k8s.io');
    expect(s.scope).toBe('Cluster');
    expect(s.names['shortNames']).toBeUndefined();
    const schema = schemaOf('nodeinventories.extensions.agents.x-k8s.io');
    expect(Object.keys(schema['properties'] as SchemaNode).sort()).toEqual([
      'address',
      'apiVersion',
      'conditions',
      'entries',
      'kind',
      'metadata',
      'node',
      'part',
      'parts',
      'pools',
      'rows',
    ]);
    expect(schema['required']).toEqual(['node']);
    expect(schema['x-kubernetes-validations']).toEqual([
      expect.objectContaining({ rule: 'has(self.part) || self.metadata.name == self.node', fieldPath: '.node' }),
    ]);
    expect(at(schema, 'entries.[]')['required']).toEqual(['name', 'phase']);
    // a row is one string to kube-apiserver: its fields are checked by the readers' schema
    expect(at(schema, 'rows.[]')).toMatchObject({ type: 'string', maxLength: 4096 });
    expect(at(schema, 'rows')['x-kubernetes-list-type']).toBe('atomic');
    expect(at(schema, 'pools.[]')['required']).toEqual(['template', 'warm', 'target']);
    expect(s.versions[0]?.subresources).toBeUndefined();
  });

  it('keeps unknown PodSpec fields but prunes unknown fields of our own types', () => {
    const schema = schemaOf('sandboxtemplates.extensions.agents.x-k8s.io');
    expect(at(schema, 'spec.podTemplate.spec')['x-kubernetes-preserve-unknown-fields']).toBe(true);
    expect(at(schema, 'spec.podTemplate.spec.containers.[]')['x-kubernetes-preserve-unknown-fields']).toBe(true);
    expect(at(schema, 'spec')['x-kubernetes-preserve-unknown-fields']).toBeUndefined();
    expect(at(schema, 'spec.podTemplate.spec.containers.[].resources.requests')['additionalProperties']).toMatchObject({
      'x-kubernetes-int-or-string': true,
    });
    expect(at(schema, 'spec.podTemplate.spec.containers')['minItems']).toBe(1);
  });
});

describe('toStructuralSchema', () => {
  it("also converts the served Sandbox schema, for sandbox-apiserver's OpenAPI", () => {
    const s = toStructuralSchema(SandboxSchema);
    expect(structuralProblems(s, '', [])).toEqual([]);
    expect(at(s, 'spec')['required']).toEqual(['podTemplate']);
    expect(at(s, 'spec.operatingMode')).toMatchObject({ enum: ['Running', 'Suspended'], default: 'Running' });
  });

  it('rejects a plain union, which a structural schema cannot express', () => {
    expect(() => toStructuralSchema(z.object({ spec: z.object({ v: z.union([z.string(), z.boolean()]) }) }))).toThrow(
      UnstructuralSchemaError,
    );
  });

  it('maps zod integers to Kubernetes formats and drops zod-only bounds', () => {
    const s = toStructuralSchema(z.object({ spec: z.object({ a: z.int32(), b: z.int().min(0), c: z.int32().max(10) }) }));
    expect(at(s, 'spec.a')).toEqual({ type: 'integer', format: 'int32' });
    expect(at(s, 'spec.b')).toEqual({ type: 'integer', format: 'int64', minimum: 0 });
    expect(at(s, 'spec.c')).toMatchObject({ type: 'integer', maximum: 10 });
  });
});

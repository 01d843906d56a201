import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxClaimSpecSchema } from '../schemas/sandbox-claim';
import { SandboxTemplateSpecSchema } from '../schemas/sandbox-template';
import {
  ignoredPodTemplateFields,
  refusedClaimFields,
  refusedSandboxFields,
  refusedTemplateFields,
  UPSTREAM_FIELDS,
} from './upstream-fields';

const template = (extra: Record<string, unknown> = {}) =>
  SandboxTemplateSpecSchema.parse({ podTemplate: { spec: { containers: [{ name: 'agent', image: 'img:1' }] } }, ...extra });
const claim = (extra: Record<string, unknown> = {}) => SandboxClaimSpecSchema.parse({ warmPoolRef: { name: 'p' }, ...extra });

describe('the list of upstream fields', () => {
  it('names every field of the agent-sandbox API this project checked, once each', () => {
    const keys = UPSTREAM_FIELDS.map((f) => `${f.kind} ${f.field}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys).toEqual(
      expect.arrayContaining([
        'SandboxClaim spec.env',
        'SandboxClaim spec.volumeClaimTemplates',
        'SandboxClaim spec.additionalPodMetadata',
        'SandboxTemplate spec.networkPolicy',
        'SandboxTemplate spec.networkPolicyManagement',
        'SandboxTemplate spec.envVarsInjectionPolicy',
        'SandboxTemplate spec.volumeClaimTemplatesPolicy',
        'SandboxTemplate spec.service',
        'SandboxWarmPool spec.updateStrategy',
        'Sandbox spec.shutdownPolicy',
        'Sandbox spec.volumeClaimTemplates',
        'Sandbox spec.service',
      ]),
    );
  });
});

describe('docs/upstream-clients.md', () => {
  it('holds the same table of fields as the list', () => {
    const doc = readFileSync(join(__dirname, '../../../../docs/upstream-clients.md'), 'utf8');
    const table = /<!-- upstream-fields:begin[^>]*-->\n([\s\S]*?)\n<!-- upstream-fields:end -->/.exec(doc)?.[1] ?? '';
    const rows = UPSTREAM_FIELDS.map((f) => `| ${f.kind} | \`${f.field}\` | ${f.verdict} | ${f.why.replaceAll('|', '\\|')} |`);
    expect(table.split('\n').slice(2)).toEqual(rows);
  });
});

describe('refusedTemplateFields', () => {
  it('refuses nothing for defaults and empty values', () => {
    expect(refusedTemplateFields(template())).toEqual([]);
    expect(refusedTemplateFields(template({ service: false, volumeClaimTemplates: [], networkPolicyManagement: 'Managed' }))).toEqual([]);
    expect(refusedTemplateFields(template({ envVarsInjectionPolicy: 'Allowed', volumeClaimTemplatesPolicy: 'Overrides' }))).toEqual([]);
  });

  it('refuses a managed networkPolicy, service true and volume claim templates, naming each field', () => {
    const refused = refusedTemplateFields(
      template({ networkPolicy: { ingress: [] }, service: true, volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: {} }] }),
    );
    expect(refused.map((r) => [r.field, r.reason])).toEqual([
      ['spec.networkPolicy', 'InvalidSpec'],
      ['spec.service', 'InvalidSpec'],
      ['spec.volumeClaimTemplates', 'InvalidSpec'],
    ]);
    expect(refused[0]?.message).toContain('Unmanaged');
  });

  it('ignores networkPolicy under networkPolicyManagement Unmanaged, as upstream does', () => {
    expect(refusedTemplateFields(template({ networkPolicy: { egress: [{}] }, networkPolicyManagement: 'Unmanaged' }))).toEqual([]);
  });
});

describe('refusedClaimFields', () => {
  const env = [{ name: 'A', value: '1' }];
  it('refuses nothing for an empty claim or empty lists', () => {
    expect(refusedClaimFields(claim(), template())).toEqual([]);
    expect(refusedClaimFields(claim({ env: [], volumeClaimTemplates: [], additionalPodMetadata: { labels: {} } }), template())).toEqual([]);
  });

  it("uses upstream's reasons where the template's policy disallows the field", () => {
    const r = refusedClaimFields(
      claim({ env, volumeClaimTemplates: [{ spec: {} }], additionalPodMetadata: { labels: { a: 'b' } } }),
      template(),
    );
    expect(r.map((x) => [x.field, x.reason])).toEqual([
      ['spec.env', 'EnvVarsInjectionRejected'],
      ['spec.volumeClaimTemplates', 'VolumeClaimTemplatesError'],
      ['spec.additionalPodMetadata', 'InvalidMetadata'],
    ]);
  });

  it('still refuses env and volumes (InvalidSpec) where the policy allows them: a microVM cannot take them', () => {
    const r = refusedClaimFields(
      claim({ env, volumeClaimTemplates: [{ spec: {} }] }),
      template({ envVarsInjectionPolicy: 'Overrides', volumeClaimTemplatesPolicy: 'Allowed' }),
    );
    expect(r.map((x) => [x.field, x.reason])).toEqual([
      ['spec.env', 'InvalidSpec'],
      ['spec.volumeClaimTemplates', 'InvalidSpec'],
    ]);
  });
});

describe('refusedSandboxFields', () => {
  it('refuses Retain only when written with a shutdownTime; defaults and Delete pass', () => {
    const at = '2030-01-01T00:00:00Z';
    expect(refusedSandboxFields({ spec: { shutdownPolicy: 'Retain' } })).toEqual([]);
    expect(refusedSandboxFields({ spec: { shutdownTime: at } })).toEqual([]);
    expect(
      refusedSandboxFields({ spec: { shutdownTime: at, shutdownPolicy: 'Delete', service: false, volumeClaimTemplates: [] } }),
    ).toEqual([]);
    expect(
      refusedSandboxFields({ spec: { shutdownTime: at, shutdownPolicy: 'Retain', service: true, volumeClaimTemplates: [{}] } }).map(
        (r) => r.field,
      ),
    ).toEqual(['spec.shutdownPolicy', 'spec.volumeClaimTemplates', 'spec.service']);
    expect(refusedSandboxFields('not an object')).toEqual([]);
  });
});

describe('ignoredPodTemplateFields', () => {
  it('lists what a microVM does not use, skipping empty values and the parts the pool key reads', () => {
    const fields = ignoredPodTemplateFields(
      {
        metadata: { annotations: { 'sandbox.cocoonstack.io/net': 'egress', team: 'a' } },
        spec: {
          runtimeClassName: 'gvisor',
          volumes: [],
          hostNetwork: false,
          containers: [
            {
              name: 'agent',
              image: 'img:1',
              resources: { requests: { cpu: '1' } },
              command: ['sh'],
              ports: [{ containerPort: 80 }],
              env: [],
            },
            { name: 'sidecar', image: 'proxy:1' },
          ],
        },
      },
      { at: 'spec.podTemplate', netAnnotationCounts: true },
    );
    expect(fields).toEqual([
      'spec.podTemplate.metadata.annotations[team]',
      'spec.podTemplate.spec.runtimeClassName',
      'spec.podTemplate.spec.containers[0].command',
      'spec.podTemplate.spec.containers[0].ports',
      'spec.podTemplate.spec.containers[1]',
    ]);
  });

  it("lists the pod template's net annotation where it does not pick the lane (a Sandbox's own metadata does)", () => {
    const pt = { metadata: { annotations: { 'sandbox.cocoonstack.io/net': 'egress' } }, spec: { containers: [{ name: 'a', image: 'i' }] } };
    expect(ignoredPodTemplateFields(pt, { at: 'spec.podTemplate', netAnnotationCounts: false })).toEqual([
      'spec.podTemplate.metadata.annotations[sandbox.cocoonstack.io/net]',
    ]);
    expect(ignoredPodTemplateFields(pt, { at: 'spec.podTemplate', netAnnotationCounts: true })).toEqual([]);
  });
});

import { synthesizeSandbox } from '@sandbox-scale/scale-core';
import { COLUMN_DEFINITIONS, humanAge, sandboxTable } from './sandbox-table';

const NOW = new Date('2026-01-02T03:04:05Z');
const ago = (s: number): string => new Date(NOW.getTime() - s * 1000).toISOString();
const running = synthesizeSandbox(
  'node-a',
  { name: 'team-a/s1', id: 'sb_1', phase: 'Running', addr: '10.0.0.5:7777', claimedAt: ago(90) },
  { resourceVersion: '7' },
);
const pending = synthesizeSandbox(
  'node-b',
  { name: 'team-a/s2', id: 'sb_2', phase: 'Pending' },
  { resourceVersion: '8', fallbackCreationTimestamp: ago(3 * 86_400 + 7_200) },
);

interface Row {
  cells: unknown[];
  object?: { kind?: string; metadata?: { name?: string } };
}
const rowsOf = (t: Record<string, unknown>): Row[] => t['rows'] as Row[];

describe('humanAge', () => {
  it('prints ages as kubectl does', () => {
    expect(humanAge(ago(5), NOW)).toBe('5s');
    expect(humanAge(ago(119), NOW)).toBe('119s');
    expect(humanAge(ago(185), NOW)).toBe('3m5s');
    expect(humanAge(ago(600), NOW)).toBe('10m');
    expect(humanAge(ago(3 * 3600 + 600), NOW)).toBe('3h10m');
    expect(humanAge(ago(4 * 86_400 + 3 * 3600), NOW)).toBe('4d3h');
    expect(humanAge(undefined, NOW)).toBe('<unknown>');
    // a clock behind the node's is no negative age
    expect(humanAge(ago(-30), NOW)).toBe('0s');
  });
});

describe('sandboxTable', () => {
  it('is a meta.k8s.io Table with the columns kubectl get prints and one row per sandbox', () => {
    const t = sandboxTable([running, pending], { resourceVersion: '8', continue: 'tok', include: 'None', version: 'v1', now: NOW });
    expect(t).toMatchObject({ kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: '8', continue: 'tok' } });
    expect((t['columnDefinitions'] as typeof COLUMN_DEFINITIONS).map((c) => c.name)).toEqual([
      'Name',
      'Ready',
      'Reason',
      'Node',
      'Age',
      'IP',
      'Claim-ID',
    ]);
    const rows = rowsOf(t);
    expect(rows.map((r) => r.cells)).toEqual([
      ['s1', 'True', 'Running', 'node-a', '90s', '10.0.0.5', 'sb_1'],
      ['s2', 'False', 'Pending', 'node-b', '3d2h', '<none>', 'sb_2'],
    ]);
    expect(rows.every((r) => r.object === undefined)).toBe(true);
  });

  it('carries the metadata or the whole object per row as includeObject asks', () => {
    const meta = rowsOf(sandboxTable([running], { resourceVersion: '7', include: 'Metadata', version: 'v1', now: NOW }))[0];
    expect(meta?.object).toEqual({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: running.metadata });
    const whole = rowsOf(sandboxTable([running], { resourceVersion: '7', include: 'Object', version: 'v1beta1', now: NOW }))[0];
    expect(whole?.object).toBe(running);
  });

  it('leaves the columns out when asked (every watch event after the first) and has no continue unless given', () => {
    const t = sandboxTable([running], { resourceVersion: '7', include: 'None', version: 'v1beta1', columns: false, now: NOW });
    expect(t).toMatchObject({ apiVersion: 'meta.k8s.io/v1beta1', metadata: { resourceVersion: '7' }, columnDefinitions: [] });
    expect(t['metadata']).not.toHaveProperty('continue');
    expect(rowsOf(t)).toHaveLength(1);
  });
});

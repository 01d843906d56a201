import type { ClaimObject } from '../claim-status';
import type { SandboxObject } from '../listing';
import { listPrintable } from './list-command';
import { render } from './output';

const NOW = new Date(Date.now() - 30_000).toISOString();
const sandbox = (name: string, labels: Record<string, string> = {}): SandboxObject => ({
  apiVersion: 'agents.x-k8s.io/v1beta1',
  kind: 'Sandbox',
  metadata: { name, namespace: 'team', labels, creationTimestamp: NOW, annotations: { 'sandbox.cocoonstack.io/claim-id': `id-${name}` } },
  status: { nodeName: 'node-1', podIPs: ['10.0.0.7'], conditions: [{ type: 'Ready', status: 'True', reason: 'Running' }] },
});
const claim = (name: string, bound: string | undefined, labels: Record<string, string> = {}): ClaimObject => ({
  metadata: { name, namespace: 'team', labels, creationTimestamp: NOW },
  spec: { warmPoolRef: { name: 'python-agent' } },
  status: bound
    ? {
        sandbox: { name: bound, claimId: `id-${bound}` },
        nodeName: 'node-1',
        conditions: [{ type: 'Ready', status: 'True', reason: 'Bound' }],
      }
    : { conditions: [{ type: 'Ready', status: 'False', reason: 'WaitingForCapacity', message: 'no warm sandbox' }] },
});

const all = { allNamespaces: false, labelSelector: undefined };

describe('kubectl sandbox list', () => {
  it('lists claimed sandboxes with their pool, sandboxes made without a claim, and unbound claims', () => {
    const p = listPrintable(all, 'team', [sandbox('held'), sandbox('forked')], [claim('held', 'held'), claim('waiting', undefined)]);
    expect(p.rows.map((r) => r.slice(0, 6))).toEqual([
      ['held', 'python-agent', 'True', 'Running', 'held', 'node-1'],
      ['forked', '<none>', 'True', 'Running', '<none>', 'node-1'],
      ['waiting', 'python-agent', 'False', 'WaitingForCapacity', 'waiting', '<none>'],
    ]);
    expect(p.names).toEqual([
      'sandbox.agents.x-k8s.io/held',
      'sandbox.agents.x-k8s.io/forked',
      'sandboxclaim.extensions.agents.x-k8s.io/waiting',
    ]);
    expect(render(p, { output: 'name', noHeaders: false })).toBe(p.names.map((n) => `${n}\n`).join(''));
    const wide = render(p, { output: 'wide', noHeaders: false }).split('\n');
    expect(wide[0]?.split(/\s+/)).toEqual(['NAME', 'POOL', 'READY', 'REASON', 'CLAIM', 'NODE', 'AGE', 'ADDRESS', 'CLAIM-ID']);
    expect(wide[1]).toMatch(/^held\s+python-agent\s+True\s+Running\s+held\s+node-1\s+\d+s\s+10\.0\.0\.7\s+id-held$/);
    const bare = render(p, { output: undefined, noHeaders: true }).split('\n');
    expect(bare[0]).toMatch(/^held\s/);
    expect(bare).toHaveLength(4);
    const json = JSON.parse(render(p, { output: 'json', noHeaders: false })) as { kind: string; items: { kind: string }[] };
    expect({ kind: json.kind, kinds: json.items.map((i) => i.kind) }).toEqual({
      kind: 'List',
      kinds: ['Sandbox', 'Sandbox', 'SandboxClaim'],
    });
  });

  it('applies -l to unbound claims here, the sandboxes having been selected by the server', () => {
    const p = listPrintable(
      { allNamespaces: false, labelSelector: 'team=search' },
      'team',
      [sandbox('held', { team: 'search' })],
      [
        claim('held', 'held'),
        claim('other-held', 'not-selected'),
        claim('waiting-search', undefined, { team: 'search' }),
        claim('waiting-else', undefined, { team: 'ads' }),
      ],
    );
    expect(p.rows.map((r) => r[0])).toEqual(['held', 'waiting-search']);
  });

  it('says so when there is nothing, as kubectl get does, and adds NAMESPACE with -A', () => {
    expect(render(listPrintable(all, 'team', [], []), { output: undefined, noHeaders: false })).toBe(
      'No sandboxes found in team namespace.\n',
    );
    const p = listPrintable({ allNamespaces: true, labelSelector: undefined }, 'team', [sandbox('a')], []);
    expect(p.headers[0]).toBe('NAMESPACE');
    expect(p.rows[0]?.slice(0, 2)).toEqual(['team', 'a']);
  });
});

describe('a command that acted on one sandbox', () => {
  it('prints its status line alone, or the name, or the object', () => {
    const p = {
      object: { name: 'x', paused: true },
      names: ['sandbox.agents.x-k8s.io/x'],
      status: 'sandbox/x paused',
      headers: [],
      rows: [],
    };
    expect(render(p, { output: undefined, noHeaders: false })).toBe('sandbox/x paused\n');
    expect(render(p, { output: 'name', noHeaders: false })).toBe('sandbox.agents.x-k8s.io/x\n');
    expect(JSON.parse(render(p, { output: 'json', noHeaders: false }))).toEqual({ name: 'x', paused: true });
  });
});

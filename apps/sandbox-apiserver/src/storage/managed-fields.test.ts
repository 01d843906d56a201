import { statusErrorOf } from '@sandbox-scale/scale-core';
import { ownersFromManagedFields, planApply, recordUpdate, toManagedFields, type Owner } from './managed-fields';

const T = '2026-01-01T00:00:00Z';
const conflictOf = (fn: () => unknown): { code?: number; message?: string; fields?: string[] } => {
  try {
    fn();
  } catch (err) {
    const e = statusErrorOf(err);
    return { code: e?.code, message: e?.message, fields: e?.details.causes?.map((c) => c.field ?? '') };
  }
  throw new Error('no error');
};

describe('managed fields', () => {
  it('serves ownership as FieldsV1 and reads it back from what a client writes', () => {
    const owners: Owner[] = [{ manager: 'kubectl', operation: 'Apply', time: T, fields: ['l:team', 'a:note', 's:operatingMode'] }];
    const served = toManagedFields(owners);
    expect(served).toEqual([
      {
        manager: 'kubectl',
        operation: 'Apply',
        apiVersion: 'agents.x-k8s.io/v1beta1',
        time: T,
        fieldsType: 'FieldsV1',
        fieldsV1: {
          'f:metadata': { 'f:annotations': { 'f:note': {} }, 'f:labels': { 'f:team': {} } },
          'f:spec': { 'f:operatingMode': {} },
        },
      },
    ]);
    expect(ownersFromManagedFields('s', served, T)).toEqual([{ ...owners[0], fields: ['l:team', 'a:note', 's:operatingMode'] }]);
    expect(conflictOf(() => ownersFromManagedFields('s', [{ manager: 'x' }], T)).code).toBe(422);
  });

  it('gives an update the fields it changed, taking them from their owners, and drops the ones it removed', () => {
    const owners: Owner[] = [{ manager: 'flux', operation: 'Apply', time: T, fields: ['l:a', 'l:b'] }];
    expect(recordUpdate(owners, 'kubectl-label', new Set(['l:a']), new Set(['l:b']), T)).toEqual([
      { manager: 'kubectl-label', operation: 'Update', time: T, fields: ['l:a'] },
    ]);
    expect(recordUpdate(owners, 'kubectl-label', new Set(), new Set(), T)).toEqual(owners);
  });

  it('applies: conflicts name the field and manager, force takes the field, dropped fields nobody else owns are removed', () => {
    const owners: Owner[] = [
      { manager: 'flux', operation: 'Apply', time: T, fields: ['l:team', 'l:tier'] },
      { manager: 'kubectl-label', operation: 'Update', time: T, fields: ['l:owner'] },
    ];
    const c = conflictOf(() =>
      planApply({ name: 's', owners, manager: 'argo', applied: new Set(['l:team']), differs: () => true, force: false, now: T }),
    );
    expect(c.code).toBe(409);
    expect(c.fields).toEqual(['.metadata.labels.team']);
    expect(c.message).toContain('conflict with "flux"');
    // an equal value is shared, not a conflict
    expect(
      planApply({ name: 's', owners, manager: 'argo', applied: new Set(['l:team']), differs: () => false, force: false, now: T }).owners,
    ).toEqual([...owners, { manager: 'argo', operation: 'Apply', time: T, fields: ['l:team'] }]);
    const forced = planApply({
      name: 's',
      owners,
      manager: 'argo',
      applied: new Set(['l:team']),
      differs: () => true,
      force: true,
      now: T,
    });
    expect(forced.owners.map((o) => [o.manager, o.fields])).toEqual([
      ['flux', ['l:tier']],
      ['kubectl-label', ['l:owner']],
      ['argo', ['l:team']],
    ]);
    // flux stops applying tier: nobody else owns it, so it goes; team is still argo's
    const dropped = planApply({
      name: 's',
      owners: forced.owners,
      manager: 'flux',
      applied: new Set(),
      differs: () => false,
      force: false,
      now: T,
    });
    expect([...dropped.removed]).toEqual(['l:tier']);
    expect(dropped.owners.map((o) => o.manager)).toEqual(['kubectl-label', 'argo']);
  });
});

import { SANDBOX_PHASES, sandboxPhaseOf } from './sandbox-phase';
import { readyConditionFor, sandboxLabelsFor } from './synthesize-sandbox';

describe('sandboxPhaseOf', () => {
  it('maps sandboxd flags to the one phase vocabulary, archived over hibernated', () => {
    expect(sandboxPhaseOf({ hibernated: false, archived: false })).toBe('Running');
    expect(sandboxPhaseOf({ hibernated: true, archived: false })).toBe('Hibernated');
    expect(sandboxPhaseOf({ hibernated: true, archived: true })).toBe('Archived');
    expect(sandboxPhaseOf({})).toBe(SANDBOX_PHASES.running);
  });

  it('gives synthesis the phases it expects: only Running is Ready, the label is the phase', () => {
    expect(readyConditionFor('n1', SANDBOX_PHASES.running)).toMatchObject({ status: 'True', reason: 'Running' });
    for (const phase of [SANDBOX_PHASES.hibernated, SANDBOX_PHASES.archived]) {
      expect(readyConditionFor('n1', phase)).toMatchObject({ status: 'False', reason: phase });
      expect(sandboxLabelsFor('n1', { phase })['sandbox.cocoonstack.io/phase']).toBe(phase);
    }
  });
});

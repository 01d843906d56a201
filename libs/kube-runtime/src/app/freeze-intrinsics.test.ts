import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

// runApp freezes the prototypes of the process it starts in; a jest worker is not such a process,
// so the probe app runs as its own Node process, started as main.ts files are.
function probe(...args: string[]): Record<string, unknown> {
  const out = execFileSync(process.execPath, ['--import', 'tsx', join(__dirname, 'freeze-intrinsics.fixture.ts'), ...args], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  const line = out.trim().split('\n').pop() ?? '';
  return JSON.parse(line) as Record<string, unknown>;
}

describe('runApp freezes the built-in prototypes', () => {
  it('refuses every write that would reach a prototype, and instances still override what they inherit', () => {
    expect(probe()).toEqual({
      viaProto: 'refused',
      viaConstructor: 'refused',
      viaArray: 'refused',
      replaced: 'refused',
      inherited: null,
      errorName: 'NamedError',
      ownToString: 'own',
    });
  });

  it('leaves them writable when told not to freeze, which is what the first test would see without it', () => {
    const open = probe('--no-freeze');
    expect(open).toMatchObject({ viaProto: 'written', viaConstructor: 'written', viaArray: 'written', replaced: 'written' });
    expect(open['inherited']).toBe('yes');
  });
});

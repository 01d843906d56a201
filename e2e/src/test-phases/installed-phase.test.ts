import { installedPhase, OTHER_PHASES_COMMAND } from './installed-phase';

describe('installedPhase', () => {
  it('runs as root on Linux, in CI and out of it', () => {
    expect(installedPhase({ platform: 'linux', uid: 0, ci: true })).toEqual({ run: true });
    expect(installedPhase({ platform: 'linux', uid: 0, ci: false })).toEqual({ run: true });
  });

  it('skips without failing when not root, naming the command that ran instead', () => {
    const phase = installedPhase({ platform: 'linux', uid: 1000, ci: false });
    expect(phase).toMatchObject({ run: false, fail: false });
    if (phase.run) throw new Error('expected a skip');
    expect(phase.reason).toContain('needs root');
    expect(phase.reason).toContain(OTHER_PHASES_COMMAND);
    expect(phase.reason).not.toContain('\n');
  });

  it('skips on a platform that is not Linux', () => {
    const phase = installedPhase({ platform: 'darwin', uid: 0, ci: false });
    if (phase.run) throw new Error('expected a skip');
    expect(phase.reason).toContain('darwin, not Linux');
  });

  it('fails in CI rather than skip silently', () => {
    expect(installedPhase({ platform: 'linux', uid: 1000, ci: true })).toMatchObject({ run: false, fail: true });
  });
});

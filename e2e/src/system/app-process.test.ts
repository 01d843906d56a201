import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../testing/eventually';
import { SupervisedApp, type SupervisedAppOptions } from './app-process';

const FIXTURE = 'e2e/test/fixtures/exit-with.ts';

function app(
  args: string[],
  extra: Partial<SupervisedAppOptions> = {},
): { app: SupervisedApp; exits: Array<{ code: number | null; restarts: number; tail: string }> } {
  const exits: Array<{ code: number | null; restarts: number; tail: string }> = [];
  const a = new SupervisedApp({
    name: 'fixture',
    entry: FIXTURE,
    args,
    logPath: join(mkdtempSync(join(tmpdir(), 'supervised-')), 'fixture.log'),
    backoffMs: 20,
    maxBackoffMs: 50,
    onUnexpectedExit: (e) => exits.push(e),
    ...extra,
  });
  return { app: a, exits };
}

describe('SupervisedApp', () => {
  it('starts a process that exits unasked again, counts each exit and reports its code and last output', async () => {
    const { app: a, exits } = app(['3']);
    await eventually(
      () => {
        if (a.restarts < 3) throw new Error(`${a.restarts} restarts`);
      },
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    await a.stop();
    expect(exits.slice(0, 3).map((e) => e.code)).toEqual([3, 3, 3]);
    expect(exits[0]?.tail).toMatch(/^started \d+$/);
    expect(exits.map((e) => e.restarts)).toEqual(exits.map((_, i) => i + 1));
    expect(a.running).toBe(false);
  }, 40_000);

  it('does not count or restart a process it was asked to stop, by SIGTERM or SIGKILL', async () => {
    for (const kill of [false, true]) {
      const { app: a, exits } = app([]);
      await eventually(
        () => {
          if (!a.running || a.pid === undefined) throw new Error('not running');
        },
        { timeoutMs: 10_000, intervalMs: 20 },
      );
      await a.stop({ kill });
      expect(a.running).toBe(false);
      expect(exits).toEqual([]);
      expect(a.restarts).toBe(0);
    }
  }, 30_000);

  it('restarts a process killed from outside, as a pod is', async () => {
    const { app: a } = app([]);
    await eventually(
      () => {
        if (!a.running) throw new Error('not running');
      },
      { timeoutMs: 10_000, intervalMs: 20 },
    );
    const first = a.pid;
    a.kill('SIGKILL');
    await eventually(
      () => {
        if (!a.running || a.pid === first) throw new Error('not restarted yet');
      },
      { timeoutMs: 10_000, intervalMs: 20 },
    );
    expect(a.restarts).toBe(1);
    await a.stop();
  }, 30_000);

  it('leaves a process with restartPolicy Never down, and still reports its exit', async () => {
    const { app: a, exits } = app(['5'], { restartPolicy: 'Never' });
    await eventually(
      () => {
        if (exits.length === 0) throw new Error('no exit yet');
      },
      { timeoutMs: 10_000, intervalMs: 20 },
    );
    expect(exits.map((e) => e.code)).toEqual([5]);
    expect(a.running).toBe(false);
    await a.stop();
  }, 30_000);
});

import { captureLog } from '@sandbox-scale/kube-runtime/testing';
import type { InventoryEntry, NodeNotice, NoticeOutcome } from '@sandbox-scale/scale-core';
import { diffEntries, NodeNotifier, type NoticeResult, type NoticeSender } from './node-notifier';

const e = (id: string, phase = 'Running'): InventoryEntry => ({ name: `a/${id}`, id, phase });

/** A sender that records each notice and answers what the test queued (applied by default). */
class RecordingSender implements NoticeSender {
  readonly sent: Array<{ target: string; notice: NodeNotice }> = [];
  answers: NoticeOutcome[] = [];
  gate: Promise<void> = Promise.resolve();
  constructor(readonly list: string[]) {}
  targets(): string[] {
    return this.list;
  }
  async send(target: string, notice: NodeNotice): Promise<NoticeOutcome> {
    await this.gate;
    this.sent.push({ target, notice: structuredClone(notice) });
    return this.answers.shift() ?? 'applied';
  }
}

function setup(targets = ['r1:6443']) {
  const sender = new RecordingSender(targets);
  const results: NoticeResult[] = [];
  const notifier = new NodeNotifier({ node: 'n1', sender, log: captureLog().log, onResult: (r) => results.push(r) });
  return { sender, notifier, results };
}

describe('diffEntries', () => {
  it('lists changed and added entries, and removed ones as null', () => {
    const prev = new Map([
      ['sb_1', e('sb_1')],
      ['sb_2', e('sb_2')],
    ]);
    const next = new Map([
      ['sb_1', e('sb_1', 'Paused')],
      ['sb_3', e('sb_3')],
    ]);
    expect([...diffEntries(prev, next)]).toEqual([
      ['sb_1', e('sb_1', 'Paused')],
      ['sb_3', e('sb_3')],
      ['sb_2', null],
    ]);
    expect(diffEntries(next, new Map(next)).size).toBe(0);
  });
});

describe('NodeNotifier', () => {
  it('tells nothing on the first read or an unchanged one, then a delta from the last change to every replica', async () => {
    const { sender, notifier } = setup(['r1:6443', 'r2:6443']);
    notifier.observed(100, [e('sb_1'), e('sb_2')]);
    notifier.observed(110, [e('sb_1'), e('sb_2')]);
    await notifier.idle();
    expect(sender.sent).toEqual([]);
    notifier.observed(120, [e('sb_1', 'Paused')]);
    await notifier.idle();
    const want: NodeNotice = { node: 'n1', seq: 120, base: 100, entries: [e('sb_1', 'Paused')], removed: ['sb_2'] };
    expect(sender.sent).toEqual([
      { target: 'r1:6443', notice: want },
      { target: 'r2:6443', notice: want },
    ]);
  });

  it('ignores a read older than the last one', async () => {
    const { sender, notifier } = setup();
    notifier.observed(100, [e('sb_1')]);
    notifier.observed(90, []);
    await notifier.idle();
    expect(sender.sent).toEqual([]);
  });

  it('sends the whole set, as of the latest read, to a replica that answers conflict', async () => {
    const { sender, notifier, results } = setup();
    sender.answers = ['conflict', 'applied'];
    notifier.observed(100, [e('sb_1')]);
    notifier.observed(120, [e('sb_1'), e('sb_2')]);
    await notifier.idle();
    expect(sender.sent.map((s) => s.notice)).toEqual([
      { node: 'n1', seq: 120, base: 100, entries: [e('sb_2')] },
      { node: 'n1', seq: 120, entries: [e('sb_1'), e('sb_2')] },
    ]);
    expect(results).toEqual(['full']);
  });

  it('merges the deltas that pile up behind a slow replica into one', async () => {
    const { sender, notifier } = setup();
    let open = (): void => undefined;
    sender.gate = new Promise<void>((resolve) => (open = resolve));
    notifier.observed(100, [e('sb_1')]);
    notifier.observed(110, [e('sb_1', 'Paused')]);
    notifier.observed(120, [e('sb_1', 'Paused'), e('sb_2')]);
    notifier.observed(130, [e('sb_2', 'Hibernated')]);
    open();
    await notifier.idle();
    expect(sender.sent.map((s) => s.notice)).toEqual([
      { node: 'n1', seq: 110, base: 100, entries: [e('sb_1', 'Paused')] },
      { node: 'n1', seq: 130, base: 110, entries: [e('sb_2', 'Hibernated')], removed: ['sb_1'] },
    ]);
  });

  it('counts a replica that cannot be reached as failed and carries on', async () => {
    const { sender, notifier, results } = setup();
    sender.send = () => Promise.reject(new Error('connection refused'));
    notifier.observed(100, [e('sb_1')]);
    notifier.observed(110, []);
    await notifier.idle();
    expect(results).toEqual(['failed']);
  });
});

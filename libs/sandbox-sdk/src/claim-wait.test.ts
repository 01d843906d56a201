import type { ListWatcher, WatchRequest } from '@sandbox-scale/kube-runtime';
import type { ClaimObject } from './claim-status';
import { waitWith } from './claim-wait';

const pending = (rv: string): ClaimObject => ({
  metadata: { name: 'c', resourceVersion: rv },
  status: { conditions: [{ type: 'Ready', status: 'False', reason: 'WaitingForCapacity', message: 'no warm sandbox' }] },
});
const ready = (rv: string): ClaimObject => ({
  metadata: { name: 'c', resourceVersion: rv },
  status: {
    sandbox: { name: 'c', claimId: 'sb_1', nodeName: 'n1', address: '10.0.0.1:7000' },
    conditions: [{ type: 'Ready', status: 'True' }],
  },
});

/** A watch of the claim that plays the events it is given, then ends (or fails). */
function watcher(plays: ((req: WatchRequest) => Promise<'ended' | 'gone'>)[]): Pick<ListWatcher, 'watch'> & { from: string[] } {
  const from: string[] = [];
  return {
    from,
    watch: (req) => {
      from.push(req.resourceVersion);
      const play = plays.shift();
      return play ? play(req) : Promise.reject(new Error('no more watches'));
    },
  };
}

describe('waiting for a claim', () => {
  it('reads once, then watches from that read and returns when an event settles it, reading no more', async () => {
    let reads = 0;
    const w = watcher([
      async (req) => {
        req.onEvent('MODIFIED', pending('11'));
        req.onEvent('MODIFIED', ready('12'));
        return 'ended';
      },
    ]);
    const phase = await waitWith(w, { signal: undefined, read: async () => (reads++, pending('10')) });
    expect({ state: phase.state, reads, from: w.from }).toEqual({ state: 'ready', reads: 1, from: ['10'] });
  });

  it('reads again when a watch ends without settling, and watches from the new read', async () => {
    const reads = [pending('10'), pending('20'), ready('30')];
    const w = watcher([async () => 'ended', async () => 'gone']);
    const phase = await waitWith(w, { signal: undefined, read: async () => reads.shift() ?? ready('99') });
    expect({ state: phase.state, from: w.from }).toEqual({ state: 'ready', from: ['10', '20'] });
  });

  it('falls back to reading when the watch is refused', async () => {
    const reads = [pending('10'), pending('11'), ready('12')];
    const w = watcher([() => Promise.reject(new Error('forbidden'))]);
    const phase = await waitWith(w, { signal: undefined, read: async () => reads.shift() ?? ready('99') });
    expect({ state: phase.state, watches: w.from.length, left: reads.length }).toEqual({ state: 'ready', watches: 1, left: 0 });
  });

  it('ends with the read once the claim is deleted mid-watch', async () => {
    const w = watcher([
      async (req) => {
        req.onEvent('DELETED', pending('11'));
        return 'ended';
      },
    ]);
    let n = 0;
    const err = await waitWith(w, {
      signal: undefined,
      read: async () => {
        if (n++ === 0) return pending('10');
        throw new Error('not found');
      },
    }).catch((e: unknown) => e);
    expect((err as Error).message).toBe('not found');
  });
});

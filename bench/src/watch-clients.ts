/**
 * The watchers of bench:scale, in a process of their own (forked with IPC), so what the bench
 * measures of a change round is the servers' work: parsing 100 streams of events here no longer
 * shares an event loop or a heap with sandbox-apiserver.
 *
 * Asked to open, it opens `count` watches on `path` through `target` and counts MODIFIED events
 * per watch; asked to await `expected`, it answers once every watch has seen that many, with when
 * the first event came, when the first watch had them all and when the last did (wall clock, ms,
 * so the parent can set them against its own start), and the CPU it spent meanwhile.
 */
import { request, type RequestOptions } from 'node:https';
import { type FromWatchers, ToWatchersSchema, type WatchTarget } from './watch-clients-protocol';

const now = (): number => performance.timeOrigin + performance.now();
const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

function main(): void {
  const send = (m: FromWatchers): void => void process.send?.(m);
  let counts: number[] = [];
  const requests: ReturnType<typeof request>[] = [];
  let firstEventAt = 0;
  let firstWatchDoneAt = 0;
  let bytes = 0;
  let cpu0 = cpuMs();
  let waiting: number | undefined;

  const check = (): void => {
    if (waiting === undefined) return;
    const expected = waiting;
    if (firstWatchDoneAt === 0 && counts.some((c) => c >= expected)) firstWatchDoneAt = now();
    if (!counts.every((c) => c >= expected)) return;
    send({ type: 'delivered', firstEventAt, firstWatchDoneAt, allDoneAt: now(), cpuMs: cpuMs() - cpu0, bytes });
    // the next round counts from zero
    waiting = undefined;
    counts = counts.map(() => 0);
    firstEventAt = 0;
    firstWatchDoneAt = 0;
    bytes = 0;
    cpu0 = cpuMs();
  };

  const open = (target: WatchTarget, path: string, w: number): void => {
    const opts: RequestOptions = { ...target, path, method: 'GET', headers: { Accept: 'application/json' } };
    const req = request(opts, (res) => {
      if (res.statusCode !== 200) {
        send({ type: 'failed', error: `watch ${w} answered ${res.statusCode}` });
        return;
      }
      let rest = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        bytes += chunk.length;
        const lines = (rest + chunk).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) {
          if (line.trim() === '') continue;
          const e = JSON.parse(line) as { type?: string };
          if (e.type !== 'MODIFIED') continue;
          if (firstEventAt === 0) firstEventAt = now();
          counts[w] = (counts[w] ?? 0) + 1;
        }
        check();
      });
    });
    req.on('error', (err) => {
      if (!req.destroyed) send({ type: 'failed', error: `watch ${w}: ${err.message}` });
    });
    req.end();
    requests.push(req);
  };

  process.on('message', (raw) => {
    const m = ToWatchersSchema.parse(raw);
    if (m.type === 'open') {
      counts = new Array<number>(m.count).fill(0);
      for (let w = 0; w < m.count; w++) open(m.target, m.path, w);
    } else if (m.type === 'await') {
      waiting = m.expected;
      check();
    } else {
      for (const r of requests) r.destroy();
      process.disconnect();
    }
  });
}

main();

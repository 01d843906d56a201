import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * CPU milliseconds the control plane's processes (kube-apiserver, etcd) have used so far, from
 * /proc (Linux; NaN elsewhere): what a claim or a change round costs the API server, beside what
 * it costs the bench's own process.
 */
export function controlPlaneCpuMs(dir: string): number {
  try {
    const pids = readFileSync(join(dir, 'pids'), 'utf8').split('\n').filter(Boolean);
    let ticks = 0;
    for (const pid of pids) {
      try {
        // fields after the command name: utime and stime are the 12th and 13th
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        ticks += Number(f[11]) + Number(f[12]);
      } catch {
        // a process that is gone (the watchdog's, say) adds nothing
      }
    }
    return ticks * 10; // USER_HZ is 100 on Linux
  } catch {
    return NaN;
  }
}

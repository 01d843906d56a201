import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** CPU ms one process has used so far (utime + stime, from /proc; Linux), NaN once it is gone. */
export function processCpuMs(pid: number | string): number {
  try {
    // fields after the command name: utime and stime are the 12th and 13th
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10; // USER_HZ is 100 on Linux
  } catch {
    return NaN;
  }
}

/**
 * CPU milliseconds the control plane's processes (kube-apiserver, etcd) have used so far, from
 * /proc (Linux; NaN elsewhere): what a claim or a change round costs the API server, beside what
 * it costs the bench's own process.
 */
export function controlPlaneCpuMs(dir: string): number {
  try {
    const pids = readFileSync(join(dir, 'pids'), 'utf8').split('\n').filter(Boolean);
    // a process that is gone (the watchdog's, say) adds nothing
    return pids.map(processCpuMs).reduce((sum, ms) => sum + (Number.isNaN(ms) ? 0 : ms), 0);
  } catch {
    return NaN;
  }
}

import { spawnSync } from 'node:child_process';

/**
 * Whether `npm test`'s last phase (the chart installed on a real node) can run here. It sets up a
 * kubelet, containerd and iptables rules, so it needs root on Linux; anywhere else the phase is
 * skipped with one line, and the unit and integration phases alone decide the exit code. In CI a
 * missing phase is a failure, never a silent skip.
 */
export interface Host {
  readonly platform: NodeJS.Platform;
  /** undefined where the platform has no uids (Windows) */
  readonly uid: number | undefined;
  readonly ci: boolean;
}

export type InstalledPhase = { readonly run: true } | { readonly run: false; readonly reason: string; readonly fail: boolean };

export const OTHER_PHASES_COMMAND = 'npm run test:unit && npm run test:int';

export function installedPhase(host: Host): InstalledPhase {
  const missing =
    host.platform !== 'linux' ? `this is ${host.platform}, not Linux` : host.uid !== 0 ? 'it needs root (sudo npm test)' : undefined;
  if (missing === undefined) return { run: true };
  return {
    run: false,
    fail: host.ci,
    reason: `installed-chart phase skipped: ${missing}; unit and integration phases ran (${OTHER_PHASES_COMMAND})`,
  };
}

function currentHost(): Host {
  return { platform: process.platform, uid: process.getuid?.(), ci: process.env.CI === 'true' };
}

// `installed-phase <command...>` runs the command where the phase can run, and otherwise says why not
if (require.main === module) {
  const phase = installedPhase(currentHost());
  if (!phase.run) {
    console.log(phase.fail ? `${phase.reason}; failing: CI runs every phase` : phase.reason);
    process.exit(phase.fail ? 1 : 0);
  }
  const [command, ...args] = process.argv.slice(2);
  if (command === undefined) throw new Error('usage: installed-phase <command> [args...]');
  const ran = spawnSync(command, args, { stdio: 'inherit' });
  process.exit(ran.status ?? 1);
}

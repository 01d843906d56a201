// Removes what a local node leaves outside its processes: containerd shims and the containers
// under them, mounts under the run dir (volumes, snapshots, network namespaces), the CNI bridge,
// and the iptables chains of the bridge plugin, kube-proxy and the kubelet. Run by stop() and by
// the watchdog after a killed owner; every step is best effort and idempotent.
// argv: <state.json> written by node.ts: { dir, bridge, serviceLink, network, lockFile, ownerPid }
const { execFileSync } = require('node:child_process');
const { readFileSync, readdirSync, rmSync } = require('node:fs');

const state = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const problems = [];

function sh(cmd, args) {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    problems.push(`${cmd} ${args.join(' ')}: ${(err.stderr || err.message).trim()}`);
    return '';
  }
}

function procs() {
  const out = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ');
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      out.push({ pid: Number(name), ppid, cmdline });
    } catch {
      /* exited */
    }
  }
  return out;
}

/** Shims started for this containerd (they name its socket) and every process below them. */
function ownedPids() {
  const all = procs();
  const mine = (p) => p.cmdline.includes(state.dir + '/') && !/watchdog\.cjs|node-cleanup\.cjs/.test(p.cmdline);
  const roots = all.filter((p) => mine(p) && p.pid !== process.pid && p.pid !== process.ppid).map((p) => p.pid);
  const owned = new Set(roots);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of all)
      if (owned.has(p.ppid) && !owned.has(p.pid)) {
        owned.add(p.pid);
        grew = true;
      }
  }
  return [...owned];
}

function sleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

for (let i = 0; i < 50; i++) {
  const pids = ownedPids();
  if (pids.length === 0) break;
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  sleep(100);
}
const left = ownedPids();
if (left.length) problems.push(`processes still running: ${left.join(' ')}`);

// deepest first, so a mount inside another comes off before its parent
const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
  .split('\n')
  .map((l) => l.split(' ')[4])
  .filter((m) => m && m.startsWith(state.dir + '/'))
  .map((m) => m.replace(/\\040/g, ' '))
  .sort((a, b) => b.length - a.length);
for (const m of mounts) sh('umount', ['-l', m]);

const links = sh('ip', ['-o', 'link', 'show'])
  .split('\n')
  .map((l) => l.split(': ')[1]?.split('@')[0]);
for (const link of [state.bridge, state.serviceLink]) if (link && links.includes(link)) sh('ip', ['link', 'delete', link]);

// iptables: rules jumping to chains of this node (the bridge plugin's CNI-<hash> chains carry the
// network name in their comment; KUBE-* belong to kube-proxy and the kubelet, one node per machine).
for (const ipt of ['iptables', 'ip6tables']) {
  for (const table of ['nat', 'filter', 'mangle']) {
    const rules = sh(ipt, ['-w', '-t', table, '-S']).split('\n');
    const ours = new Set(rules.filter((r) => r.startsWith('-N KUBE-')).map((r) => r.slice(3).trim()));
    for (const r of rules) {
      if (r.startsWith('-A ') && r.includes(`name: \\"${state.network}\\"`)) {
        const target = r.match(/ -j (CNI-\S+)/)?.[1];
        if (target) ours.add(target);
      }
    }
    for (const r of rules) {
      if (!r.startsWith('-A ')) continue;
      const chain = r.split(' ')[1];
      const target = r.match(/ -j (\S+)/)?.[1];
      if (ours.has(chain)) continue; // flushed with its chain below
      if (target && ours.has(target)) sh('sh', ['-c', `${ipt} -w -t ${table} -D ${r.slice(3)}`]);
    }
    for (const chain of ours) sh(ipt, ['-w', '-t', table, '-F', chain]);
    for (const chain of ours) sh(ipt, ['-w', '-t', table, '-X', chain]);
  }
}

try {
  if (readFileSync(state.lockFile, 'utf8').trim() === String(state.ownerPid)) rmSync(state.lockFile, { force: true });
} catch {
  /* no lock */
}

if (problems.length) {
  process.stderr.write(`[node-cleanup] ${problems.join('\n[node-cleanup] ')}\n`);
  process.exitCode = 1;
}

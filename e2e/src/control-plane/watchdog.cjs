// Detached guard: when the process that started the control plane dies without stopping it
// (SIGKILL, a crashed test runner), kill its children and remove its temp dir.
// argv: <ownerPid> <dir> <pidFile>
const { execFileSync } = require('node:child_process');
const { readFileSync, rmSync, existsSync } = require('node:fs');
const { join } = require('node:path');

const [ownerPid, dir, pidFile] = process.argv.slice(2);

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function children() {
  try {
    return readFileSync(pidFile, 'utf8')
      .split('\n')
      .map(Number)
      .filter((n) => n > 0);
  } catch {
    return [];
  }
}

const timer = setInterval(() => {
  if (!existsSync(dir)) process.exit(0); // stopped cleanly
  if (alive(Number(ownerPid))) return;
  clearInterval(timer);
  const pids = children();
  for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGTERM');
  setTimeout(() => {
    for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
    // a node also leaves shims, containers, mounts, a bridge and iptables chains
    const nodeState = join(dir, 'node-state.json');
    if (existsSync(nodeState)) {
      try {
        execFileSync(process.execPath, [join(__dirname, 'node-cleanup.cjs'), nodeState], { stdio: 'ignore', timeout: 60000 });
      } catch {
        /* best effort */
      }
    }
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  }, 3000);
}, 500);

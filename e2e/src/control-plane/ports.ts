import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Ports are handed out below the kernel's ephemeral range. A port the OS picked for `listen(0)`
 * comes from that range, which is also where every outgoing connection takes its source port:
 * in the seconds between picking a port and the app binding it, a busy suite's connections could
 * take it (EADDRINUSE). Below 30000 also stays clear of Kubernetes' default NodePort range.
 */
const RANGE_LOW = 20_000;
const RANGE_HIGH_DEFAULT = 30_000;
/** Reservations shared by every process of a run (jest workers start suites in parallel); tests plant other processes' there. */
export const portReservations = join(tmpdir(), 'sandbox-scale-ports');

function rangeHigh(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > RANGE_LOW + 1_000) return Math.min(low, RANGE_HIGH_DEFAULT);
  } catch {
    // not Linux: the default range is below every common ephemeral range
  }
  return RANGE_HIGH_DEFAULT;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Claims `port` for this process across processes; a reservation of a process that ended is taken over. */
function reserve(port: number): boolean {
  const file = join(portReservations, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(readFileSync(file, 'utf8'));
      if (Number.isInteger(owner) && owner > 0 && alive(owner)) return false;
      try {
        unlinkSync(file);
      } catch {
        // another process took it over first; the next attempt finds its reservation
      }
    }
  }
  return false;
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    // every address: a replica may bind 0.0.0.0, and that fails while any address holds the port
    srv.listen({ port, host: '0.0.0.0', exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/** The first of `candidates` this process could reserve and nothing listens on. */
export async function takePort(candidates: Iterable<number>): Promise<number | undefined> {
  mkdirSync(portReservations, { recursive: true });
  for (const port of candidates) {
    if (!reserve(port)) continue;
    if (await bindable(port)) return port;
  }
  return undefined;
}

function* randomPorts(low: number, high: number, count: number): Generator<number> {
  for (let i = 0; i < count; i++) yield low + Math.floor(Math.random() * (high - low));
}

/**
 * A TCP port nothing listens on, held for this process until it ends: no other process of the run
 * is handed it, and outgoing connections never take it.
 */
export async function freePort(): Promise<number> {
  const high = rangeHigh();
  const port = await takePort(randomPorts(RANGE_LOW, high, 500));
  if (port === undefined) throw new Error(`no free TCP port in ${RANGE_LOW}-${high - 1} after 500 tries`);
  return port;
}

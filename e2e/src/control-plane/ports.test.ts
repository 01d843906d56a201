import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { freePort, portReservations, takePort } from './ports';

const ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

/** A pid no process has: a child that has already exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

/** Ports no process reserved yet (the reservation directory is shared with every run on this machine). */
function unreserved(count: number): number[] {
  const out: number[] = [];
  for (let p = 20_000 + Math.floor(Math.random() * 5_000); out.length < count; p++)
    if (!existsSync(join(portReservations, String(p)))) out.push(p);
  return out;
}

describe('freePort', () => {
  it('hands out distinct ports below the ephemeral range', async () => {
    const ports = await Promise.all(Array.from({ length: 100 }, () => freePort()));
    expect(new Set(ports).size).toBe(100);
    for (const p of ports) {
      expect(p).toBeGreaterThanOrEqual(20_000);
      expect(p).toBeLessThan(Math.min(30_000, ephemeralLow));
    }
  });

  it('skips a port another live process reserved, and takes over one of a process that ended', async () => {
    mkdirSync(portReservations, { recursive: true });
    const [held, stale, next] = unreserved(3) as [number, number, number];
    writeFileSync(join(portReservations, String(held)), String(process.ppid));
    writeFileSync(join(portReservations, String(stale)), String(deadPid()));
    expect(await takePort([held, next])).toBe(next);
    expect(await takePort([stale])).toBe(stale);
    expect(readFileSync(join(portReservations, String(stale)), 'utf8')).toBe(String(process.pid));
  });

  it('skips a port something listens on', async () => {
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const busy = (server.address() as { port: number }).port;
    try {
      const [other] = unreserved(1) as [number];
      expect(await takePort([busy, other])).toBe(other);
    } finally {
      server.close();
    }
  });
});

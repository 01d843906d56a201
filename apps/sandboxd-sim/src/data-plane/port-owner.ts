import { readdir, readFile, readlink } from 'node:fs/promises';
import type { GuestOwner } from './guest-ids';

/** TCP state LISTEN in /proc/net/tcp{,6}. */
const LISTEN = '0A';

/** A TCP socket listening on the port: the uid that opened it and its inode. */
interface Listener {
  uid: number;
  inode: string;
}

/**
 * The TCP sockets listening on `port` in this network namespace, from the kernel's own tables
 * (/proc/net/tcp and tcp6: `local_address` ends in the port in hex, `st` is the state, the eighth
 * column the uid that opened the socket, the tenth its inode).
 */
async function listeners(port: number): Promise<Listener[]> {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const found: Listener[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await readFile(table, 'utf8').catch(() => '');
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 9 && cols[3] === LISTEN && cols[1]?.endsWith(`:${hexPort}`) && cols[9] !== '0')
        found.push({ uid: Number(cols[7]), inode: cols[9] ?? '' });
    }
  }
  return found;
}

/** Every process whose group is one of `groups` (a command's children stay in its group). */
async function membersOf(groups: ReadonlySet<number>): Promise<number[]> {
  const members: number[] = [];
  for (const name of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    // `pid (comm) state ppid pgrp …`: comm may hold spaces and parentheses, so split after the last `)`
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (groups.has(Number(fields[2]))) members.push(Number(name));
  }
  return members;
}

/**
 * Whether the sandbox holds a socket listening on `port`: with a uid of its own, a listener that
 * uid opened (whichever process, in or out of its groups); without, one held by a member of a
 * process group its commands lead. A guest port-forward reaches only such a listener: every
 * sandbox of the simulator shares the host's loopback, and a port another sandbox or the host
 * opened is not this guest's. Linux only (it reads /proc); elsewhere nothing is owned.
 */
export async function ownsListener(groupLeaders: readonly number[], port: number, owner: GuestOwner | undefined): Promise<boolean> {
  if (owner !== undefined) return (await listeners(port)).some((l) => l.uid === owner.uid);
  if (groupLeaders.length === 0) return false;
  const inodes = new Set((await listeners(port)).map((l) => l.inode));
  if (inodes.size === 0) return false;
  for (const pid of await membersOf(new Set(groupLeaders))) {
    for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])) {
      const link = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (m !== null && inodes.has(m[1] ?? '')) return true;
    }
  }
  return false;
}

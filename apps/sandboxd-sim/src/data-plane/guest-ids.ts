import { readdir, readFile } from 'node:fs/promises';
import { z } from 'zod';

/** The uid and gid a sandbox's commands run as and its files belong to. */
export interface GuestOwner {
  uid: number;
  gid: number;
}

/** `--guest-uids=<first>-<last>`: an inclusive range of uids, none of them 0. */
export const GuestUidRangeSchema = z
  .string()
  .regex(/^\d+-\d+$/, 'expected <first>-<last>, e.g. 200000-299999')
  .transform((s) => s.split('-').map(Number) as [number, number])
  .refine(([first, last]) => first >= 1000 && last >= first && last < 2 ** 31, 'the range must lie within 1000..2147483647, first <= last')
  .transform(([first, last]) => ({ first, count: last - first + 1 }));
export type GuestUidRange = z.infer<typeof GuestUidRangeSchema>;

/**
 * Hands each sandbox whose root is created a uid of its own (and the same gid), so its commands
 * cannot read the node's secrets, write outside their root, or reach another sandbox's files.
 * Uids go round the range in order: a uid comes back only after every other one was handed out,
 * and release kills whatever still runs under it first.
 */
export class GuestIds {
  readonly #byId = new Map<string, GuestOwner>();
  readonly #inUse = new Set<number>();
  #next = 0;

  constructor(readonly range: GuestUidRange) {}

  /** The sandbox's owner, assigned now if it has none. */
  assign(sandboxId: string): GuestOwner {
    const had = this.#byId.get(sandboxId);
    if (had !== undefined) return had;
    if (this.#inUse.size >= this.range.count) throw new Error(`every guest uid of ${this.range.first}+${this.range.count} is in use`);
    let uid: number;
    do {
      uid = this.range.first + this.#next;
      this.#next = (this.#next + 1) % this.range.count;
    } while (this.#inUse.has(uid));
    const owner = { uid, gid: uid };
    this.#inUse.add(uid);
    this.#byId.set(sandboxId, owner);
    return owner;
  }

  of(sandboxId: string): GuestOwner | undefined {
    return this.#byId.get(sandboxId);
  }

  /** The sandbox is gone: every process still running as its uid is killed, and the uid is free again. */
  async release(sandboxId: string): Promise<void> {
    const owner = this.#byId.get(sandboxId);
    if (owner === undefined) return;
    this.#byId.delete(sandboxId);
    await killUid(owner.uid);
    this.#inUse.delete(owner.uid);
  }

  /** Every guest's processes killed (the node stops). */
  async releaseAll(): Promise<void> {
    await Promise.all([...this.#byId.keys()].map((id) => this.release(id)));
  }
}

/**
 * SIGKILL to every process whose real uid is `uid`, found in /proc: a command that left its process
 * group (setsid, a double fork) is still the sandbox's, and must not outlive it or meet the uid's
 * next holder.
 */
export async function killUid(uid: number): Promise<void> {
  // a process may fork while the table is read: go round until a pass finds none (bounded)
  for (let pass = 0; pass < KILL_PASSES; pass++) {
    let found = 0;
    for (const name of await readdir('/proc').catch(() => [] as string[])) {
      if (!/^\d+$/.test(name)) continue;
      const status = await readFile(`/proc/${name}/status`, 'utf8').catch(() => '');
      const m = /^Uid:\s+(\d+)/m.exec(status);
      if (m === null || Number(m[1]) !== uid || /^State:\s+Z/m.test(status)) continue;
      found++;
      try {
        process.kill(Number(name), 'SIGKILL');
      } catch {
        // it ended meanwhile
      }
    }
    if (found === 0) return;
  }
}

const KILL_PASSES = 8;

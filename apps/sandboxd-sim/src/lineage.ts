import { createHash } from 'node:crypto';
import type { SimKey } from './wire-key';

export interface CheckpointRecord {
  readonly id: string;
  readonly name: string | undefined;
  readonly sandboxId: string;
  readonly key: SimKey;
  readonly tenant: string | undefined;
  /** Node-relative milliseconds. */
  readonly createdAt: number;
}

export interface TemplateRecord {
  /** `(name, source net, source size)`. */
  readonly key: SimKey;
  readonly tenant: string | undefined;
  readonly digest: string;
}

/**
 * Checkpoints and promoted templates of one node. Neither depends on its source sandbox
 * staying alive.
 */
export class Lineage {
  readonly checkpoints = new Map<string, CheckpointRecord>();
  readonly templates = new Map<string, TemplateRecord>();
  #generation = 0;

  addCheckpoint(rec: CheckpointRecord): void {
    this.checkpoints.set(rec.id, rec);
  }

  /** Newest first; a tenant sees only its own (root: `undefined` filter sees all). */
  listCheckpoints(tenant: string | undefined, all: boolean): CheckpointRecord[] {
    const out: CheckpointRecord[] = [];
    for (const c of this.checkpoints.values()) if (all || c.tenant === tenant) out.push(c);
    return out.sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1));
  }

  /** A stable digest per promote: changes whenever a name is promoted again. */
  promote(key: SimKey, tenant: string | undefined, sourceId: string): TemplateRecord {
    this.#generation++;
    const digest = `sha256:${createHash('sha256').update(`${sourceId}:${key.id}:${this.#generation}`).digest('hex')}`;
    const rec: TemplateRecord = { key, tenant, digest };
    this.templates.set(key.id, rec);
    return rec;
  }

  /** Drops records older than the TTL (hourly sweep); returns how many went. */
  sweepCheckpoints(now: number, ttlHours: number): number {
    if (ttlHours <= 0) return 0;
    const cutoff = now - ttlHours * 3_600_000;
    let n = 0;
    for (const [id, c] of this.checkpoints) {
      if (c.createdAt <= cutoff) {
        this.checkpoints.delete(id);
        n++;
      }
    }
    return n;
  }
}

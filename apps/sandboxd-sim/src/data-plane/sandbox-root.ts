import { chmod, chown, cp, lchown, mkdir, opendir, realpath, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { GuestIds, type GuestOwner, type GuestUidRange } from './guest-ids';

/**
 * The directories of one node under the data directory: `sandboxes/<id>` is a sandbox's root,
 * `checkpoints/<id>` the copy a checkpoint keeps. A root is created on first use (a data-plane
 * call, or a claim that starts from a copy), so warm and untouched claims cost no directory.
 */
export class SandboxRoots {
  readonly #sandboxes: string;
  readonly #checkpoints: string;
  /** Real paths of the roots created so far, by sandbox id. */
  readonly #roots = new Map<string, Promise<string>>();
  readonly #checkpointCopies = new Set<string>();
  /** With guest uids: each root belongs to its sandbox's own uid. */
  readonly #guests: GuestIds | undefined;

  constructor(
    readonly nodeDir: string,
    guestUids?: GuestUidRange,
  ) {
    this.#sandboxes = join(nodeDir, 'sandboxes');
    this.#checkpoints = join(nodeDir, 'checkpoints');
    this.#guests = guestUids === undefined ? undefined : new GuestIds(guestUids);
  }

  /** Clears what an earlier run of this node left behind and creates the node's directories. */
  async init(): Promise<void> {
    await rm(this.nodeDir, { recursive: true, force: true });
    await mkdir(this.#sandboxes, { recursive: true });
    await mkdir(this.#checkpoints, { recursive: true });
    // guests pass through to their own root, and list or write none of these
    if (this.#guests !== undefined) for (const d of [this.nodeDir, this.#sandboxes, this.#checkpoints]) await chmod(d, 0o711);
  }

  /** The uid and gid the sandbox's commands run as and its files belong to; undefined without guest uids. */
  ownerOf(id: string): GuestOwner | undefined {
    return this.#guests?.of(id);
  }

  has(id: string): boolean {
    return this.#roots.has(id);
  }

  /** The root's real path, created now if this is its first use. */
  ensure(id: string): Promise<string> {
    let root = this.#roots.get(id);
    if (root === undefined) {
      const dir = join(this.#sandboxes, id);
      root = mkdir(dir, { recursive: true, mode: 0o755 }).then(async () => {
        const owner = this.#guests?.assign(id);
        if (owner !== undefined) {
          await chown(dir, owner.uid, owner.gid);
          await chmod(dir, 0o700);
        }
        return realpath(dir);
      });
      this.#roots.set(id, root);
      root.catch(() => this.#roots.delete(id));
    }
    return root;
  }

  /** Gives `to` a copy of `from`'s root (nothing when `from` never had one). */
  async copyRoot(from: string, to: string): Promise<void> {
    const src = this.#roots.get(from);
    if (src === undefined) return;
    await this.#copyInto(await src, to);
  }

  /** Keeps a copy of the sandbox's root for a checkpoint (none when it never had one). */
  async keepCheckpoint(sandboxId: string, checkpointId: string): Promise<void> {
    const src = this.#roots.get(sandboxId);
    if (src === undefined) return;
    this.#checkpointCopies.add(checkpointId);
    await cp(await src, join(this.#checkpoints, checkpointId), { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
  }

  /** A new claim from a checkpoint starts with its copy. */
  async restoreCheckpoint(checkpointId: string, sandboxId: string): Promise<void> {
    if (!this.#checkpointCopies.has(checkpointId)) return;
    await this.#copyInto(join(this.#checkpoints, checkpointId), sandboxId);
  }

  async dropCheckpoint(checkpointId: string): Promise<void> {
    if (!this.#checkpointCopies.delete(checkpointId)) return;
    await rm(join(this.#checkpoints, checkpointId), { recursive: true, force: true });
  }

  /** Checkpoint copies whose record is gone (swept by age). */
  async pruneCheckpoints(live: (id: string) => boolean): Promise<void> {
    await Promise.all([...this.#checkpointCopies].filter((id) => !live(id)).map((id) => this.dropCheckpoint(id)));
  }

  async removeRoot(id: string): Promise<void> {
    const root = this.#roots.get(id);
    if (root === undefined) return;
    this.#roots.delete(id);
    // its processes first, so none writes into the root while it goes, or outlives it under a uid that comes back
    await this.#guests?.release(id);
    await rm(join(this.#sandboxes, id), { recursive: true, force: true });
  }

  /** Removes the node's whole directory (the node stops). */
  async removeAll(): Promise<void> {
    this.#roots.clear();
    this.#checkpointCopies.clear();
    await this.#guests?.releaseAll();
    await rm(this.nodeDir, { recursive: true, force: true });
  }

  async #copyInto(src: string, id: string): Promise<void> {
    const dest = await this.ensure(id);
    // symbolic links are copied as they are: a link is resolved (and checked) when it is used
    await cp(src, dest, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
    const owner = this.ownerOf(id);
    if (owner !== undefined) await chownTree(dest, owner);
  }
}

/** Gives everything under `dir` (links themselves, never their targets) to `owner`. */
async function chownTree(dir: string, owner: GuestOwner): Promise<void> {
  for await (const entry of await opendir(dir)) {
    const path = join(dir, entry.name);
    await lchown(path, owner.uid, owner.gid);
    if (entry.isDirectory()) await chownTree(path, owner);
  }
}

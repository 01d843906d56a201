import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** A file's content (with the mode it gets, else the umask's), a symlink's target, or an empty directory. */
export type TreeNode =
  string | Buffer | { readonly data: string | Buffer; readonly mode: number } | { readonly symlink: string } | { readonly dir: true };

/** Writes `tree` under root (created), keyed by relative path; parent directories are made as needed. */
export function writeTree(root: string, tree: Record<string, TreeNode>): void {
  for (const [path, node] of Object.entries(tree)) {
    const full = join(root, path);
    mkdirSync(dirname(full), { recursive: true });
    if (typeof node === 'string' || Buffer.isBuffer(node)) writeFileSync(full, node);
    else if ('dir' in node) mkdirSync(full);
    else if ('symlink' in node) symlinkSync(node.symlink, full);
    else {
      writeFileSync(full, node.data);
      chmodSync(full, node.mode);
    }
  }
}

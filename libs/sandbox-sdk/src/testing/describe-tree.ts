import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Every entry under root by relative path: its kind, permission bits and content (bytes as
 * base64, or a symlink's target), so two trees compare with one toEqual and a difference names
 * the path.
 */
export function describeTree(root: string, rel = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(join(root, rel)).sort()) {
    const path = rel ? `${rel}/${name}` : name;
    const st = lstatSync(join(root, path));
    const mode = (st.mode & 0o777).toString(8);
    if (st.isSymbolicLink()) out[path] = `link -> ${readlinkSync(join(root, path))}`;
    else if (st.isDirectory()) {
      out[path] = `dir ${mode}`;
      Object.assign(out, describeTree(root, path));
    } else out[path] = `file ${mode} ${readFileSync(join(root, path)).toString('base64')}`;
  }
  return out;
}

import { z } from 'zod';

/** envd's `filesystem.Filesystem` service in proto3 JSON, as e2b's SDKs send and read it. */

export const PathRequestSchema = z.object({ path: z.string().min(1).max(4096) });
export const ListDirRequestSchema = z.object({ path: z.string().min(1).max(4096), depth: z.number().int().min(0).max(16).default(1) });
export const MoveRequestSchema = z.object({ source: z.string().min(1).max(4096), destination: z.string().min(1).max(4096) });

export type FileType = 'FILE_TYPE_UNSPECIFIED' | 'FILE_TYPE_FILE' | 'FILE_TYPE_DIRECTORY' | 'FILE_TYPE_SYMLINK';

/** What the node says of one path, before it is an EntryInfo. */
export interface FileFacts {
  name: string;
  path: string;
  kind: 'file' | 'dir' | 'symlink' | 'other';
  size: number;
  /** Permission bits and the type bits, as stat reports st_mode. */
  mode: number;
  modifiedTime?: string;
  owner?: string;
  group?: string;
  symlinkTarget?: string;
}

const TYPE_OF: Record<FileFacts['kind'], FileType> = {
  file: 'FILE_TYPE_FILE',
  dir: 'FILE_TYPE_DIRECTORY',
  symlink: 'FILE_TYPE_SYMLINK',
  other: 'FILE_TYPE_UNSPECIFIED',
};

/** `-rwxr-xr-x`: the permissions string envd reports beside the mode. */
export function permissionString(kind: FileFacts['kind'], mode: number): string {
  const lead = kind === 'dir' ? 'd' : kind === 'symlink' ? 'L' : '-';
  const bits = 'rwxrwxrwx';
  let out = lead;
  for (let i = 0; i < 9; i++) out += mode & (1 << (8 - i)) ? bits[i] : '-';
  return out;
}

/**
 * An EntryInfo in proto3 JSON: int64 `size` as a string, the Timestamp as RFC 3339, defaults
 * left out. The JS SDK's `list` drops entries of type UNSPECIFIED, as envd's own does not report
 * them either.
 */
export function entryInfo(f: FileFacts): Record<string, unknown> {
  return {
    name: f.name,
    type: TYPE_OF[f.kind],
    path: f.path,
    ...(f.size !== 0 ? { size: String(f.size) } : {}),
    ...(f.mode !== 0 ? { mode: f.mode } : {}),
    permissions: permissionString(f.kind, f.mode),
    owner: f.owner ?? 'user',
    group: f.group ?? 'user',
    ...(f.modifiedTime ? { modifiedTime: f.modifiedTime } : {}),
    ...(f.symlinkTarget !== undefined ? { symlinkTarget: f.symlinkTarget } : {}),
  };
}

/** What `POST /files` answers for each file written: `[{name,type,path}]`; an empty array is an SDK error. */
export function writtenEntry(path: string): { name: string; type: 'file'; path: string } {
  return { name: path.slice(path.lastIndexOf('/') + 1), type: 'file', path };
}

import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { create } from '@bufbuild/protobuf';
import { EntryInfoSchema, FileType, type EntryInfo } from '../gen/filesystem/filesystem_pb';
import type { FileFacts } from './guest';

const TYPE_OF: Record<FileFacts['kind'], FileType> = {
  file: FileType.FILE,
  dir: FileType.DIRECTORY,
  symlink: FileType.SYMLINK,
  other: FileType.UNSPECIFIED,
};

/** `-rwxr-xr-x`: the permissions string envd reports beside the mode. */
export function permissionString(kind: FileFacts['kind'], mode: number): string {
  const lead = kind === 'dir' ? 'd' : kind === 'symlink' ? 'L' : '-';
  const bits = 'rwxrwxrwx';
  let out = lead;
  for (let i = 0; i < 9; i++) out += mode & (1 << (8 - i)) ? bits[i] : '-';
  return out;
}

/** An EntryInfo; the JS SDK's `list` drops type UNSPECIFIED (a socket, a device), as envd's own list does. */
export function entryInfo(f: FileFacts): EntryInfo {
  return create(EntryInfoSchema, {
    name: f.name,
    type: TYPE_OF[f.kind],
    path: f.path,
    size: BigInt(f.size),
    mode: f.mode & 0o7777,
    permissions: permissionString(f.kind, f.mode),
    owner: f.owner,
    group: f.group,
    modifiedTime: timestampFromDate(f.modifiedTime),
    isSymlink: f.kind === 'symlink',
    ...(f.symlinkTarget !== undefined ? { symlinkTarget: f.symlinkTarget } : {}),
  });
}

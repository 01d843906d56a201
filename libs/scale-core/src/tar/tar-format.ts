import { findInCauseChain, SandboxScaleError } from '../errors/base';

/**
 * The tar format as `tar` and `kubectl cp` write and read it: 512-byte ustar headers, pax
 * extended headers for what ustar cannot hold (long or non-ASCII paths and link targets, sizes
 * past 8 GiB), and on reading also GNU's long-name entries and base-256 numbers, which GNU tar
 * writes. Pure: bytes in, bytes out; the streaming reader is in tar-reader.ts.
 */

/** A tar archive that is corrupt or cut short (or would be, written from a file that changed), or names a path outside the directory it is unpacked in. */
export class ArchiveError extends SandboxScaleError {}

/** True when err, or anything in its cause chain, is an ArchiveError. */
export function isArchiveError(err: unknown): boolean {
  return findInCauseChain(err, 'ArchiveError') !== undefined;
}

export const TAR_BLOCK = 512;
/** Two zero blocks end an archive. */
export const TAR_END = Buffer.alloc(2 * TAR_BLOCK);

/**
 * The largest pax extended header or GNU long name read: a path is at most 4 KiB, the rest is
 * slack. Metadata is held whole, so an archive may not make the reader buffer more than this.
 */
export const MAX_TAR_META_BYTES = 64 * 1024;

export type TarEntryType = 'file' | 'dir' | 'symlink' | 'hardlink' | 'other';

/** An entry as read. */
export interface TarEntry {
  /** Relative and normalised (no `.`, `..` or empty segments), `/`-separated; `''` for the archive's `./`. */
  readonly path: string;
  readonly type: TarEntryType;
  readonly mode: number;
  /** The body's length; 0 for types that carry none (directories, links, devices). */
  readonly size: number;
  readonly mtimeSecs: number;
  /** The target of a symlink or hard link; `''` for other types. */
  readonly linkname: string;
}

/** An entry to write: devices and FIFOs (`other`) are read, never written. */
export type TarHeaderEntry = Omit<TarEntry, 'type' | 'linkname'> & {
  readonly type: Exclude<TarEntryType, 'other'>;
  readonly linkname?: string;
};

const MAX_OCTAL_11 = 0o77777777777;
const TYPE_FLAGS: Record<TarHeaderEntry['type'], string> = { file: '0', dir: '5', symlink: '2', hardlink: '1' };
/** Printable ASCII: what every reader decodes alike. Anything else goes in a pax header, which is UTF-8 by definition. */
const PORTABLE = /^[\x20-\x7e]*$/;

function writeOctal(block: Buffer, offset: number, length: number, value: number): void {
  block.write(
    `${Math.floor(value)
      .toString(8)
      .padStart(length - 1, '0')}\0`,
    offset,
    length,
    'ascii',
  );
}

/** Splits a path over ustar's prefix (155 bytes) and name (100 bytes) at a slash, if it can be. */
function splitPath(path: string): { name: string; prefix: string } | undefined {
  if (path.length <= 100) return { name: path, prefix: '' };
  for (let i = path.indexOf('/'); i > 0; i = path.indexOf('/', i + 1)) {
    const prefix = path.slice(0, i);
    const name = path.slice(i + 1);
    if (prefix.length <= 155 && name.length <= 100 && name !== '') return { name, prefix };
  }
  return undefined;
}

/** One pax record, `<length> <key>=<value>\n`: the length counts itself, so its digit count is found by trying. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(body);
  while (Buffer.byteLength(`${len}${body}`) !== len) len = Buffer.byteLength(`${len}${body}`);
  return `${len}${body}`;
}

/** An ASCII stand-in of at most `max` bytes for a name a pax header carries in full. */
function portableStandIn(name: string, max: number): string {
  return name.replace(/[^\x20-\x7e]/g, '_').slice(-max);
}

interface UstarFields {
  name: string;
  prefix: string;
  typeflag: string;
  mode: number;
  size: number;
  mtimeSecs: number;
  linkname: string;
}

function ustarHeader(f: UstarFields): Buffer {
  const block = Buffer.alloc(TAR_BLOCK);
  block.write(f.name, 0, 100, 'ascii');
  writeOctal(block, 100, 8, f.mode & 0o7777);
  // owners are left out: the unpacking side owns what it writes
  writeOctal(block, 108, 8, 0);
  writeOctal(block, 116, 8, 0);
  writeOctal(block, 124, 12, f.size);
  writeOctal(block, 136, 12, Math.max(0, Math.min(f.mtimeSecs, MAX_OCTAL_11)));
  block.write(f.typeflag, 156, 1, 'ascii');
  block.write(f.linkname, 157, 100, 'ascii');
  block.write('ustar\u000000', 257, 8, 'ascii');
  block.write(f.prefix, 345, 155, 'ascii');
  writeChecksum(block);
  return block;
}

/** Writes a header block's checksum: the sum of its bytes, its own field counted as spaces. */
export function writeChecksum(block: Buffer): void {
  block.fill(0x20, 148, 156);
  let sum = 0;
  for (const b of block) sum += b;
  block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
}

/**
 * The header of `e`: its ustar block, after a pax extended header when something does not fit.
 * Its body (a file's `size` bytes) follows, then tarPadding(size). A directory's path gets its
 * trailing `/`; the directory itself (`''`) is written as `./`.
 */
export function encodeTarHeader(e: TarHeaderEntry): Buffer {
  const path = e.type === 'dir' ? `${e.path.replace(/\/+$/, '') || '.'}/` : e.path;
  const linkname = e.linkname ?? '';
  const split = PORTABLE.test(path) ? splitPath(path) : undefined;
  const linkFits = PORTABLE.test(linkname) && linkname.length <= 100;
  const size = e.type === 'file' ? e.size : 0;
  const records = [
    ...(split === undefined ? [paxRecord('path', path)] : []),
    ...(linkFits ? [] : [paxRecord('linkpath', linkname)]),
    ...(size > MAX_OCTAL_11 ? [paxRecord('size', String(size))] : []),
  ];
  const header = ustarHeader({
    name: split?.name ?? portableStandIn(path, 100),
    prefix: split?.prefix ?? '',
    typeflag: TYPE_FLAGS[e.type],
    mode: e.mode,
    size: size > MAX_OCTAL_11 ? 0 : size,
    mtimeSecs: e.mtimeSecs,
    linkname: linkFits ? linkname : '',
  });
  if (records.length === 0) return header;
  const pax = Buffer.from(records.join(''), 'utf8');
  const base = path.replace(/\/+$/, '');
  const paxName = `PaxHeaders/${portableStandIn(base.slice(base.lastIndexOf('/') + 1), 89)}`;
  const paxHeader = ustarHeader({
    name: paxName,
    prefix: '',
    typeflag: 'x',
    mode: 0o644,
    size: pax.length,
    mtimeSecs: e.mtimeSecs,
    linkname: '',
  });
  return Buffer.concat([paxHeader, pax, tarPadding(pax.length), header]);
}

/** The zero bytes that round a body of `size` bytes up to whole blocks. */
export function tarPadding(size: number): Buffer {
  return Buffer.alloc((TAR_BLOCK - (size % TAR_BLOCK)) % TAR_BLOCK);
}

function readString(block: Buffer, offset: number, length: number): string {
  const field = block.subarray(offset, offset + length);
  const nul = field.indexOf(0);
  return field.subarray(0, nul === -1 ? length : nul).toString('utf8');
}

/** GNU's base-256 form for values octal cannot hold: the high bit of the first byte set, two's complement after it. */
function readBase256(field: Buffer): number {
  const first = field[0] ?? 0;
  const negative = (first & 0x40) !== 0;
  let n = negative ? (first & 0x7f) - 0x80 : first & 0x7f;
  for (const b of field.subarray(1)) n = n * 256 + b;
  return n;
}

/** A numeric field, in octal or base-256; one that is neither, or that a JS number cannot hold exactly, is a corrupt header. */
function readNumber(block: Buffer, offset: number, length: number, what: string): number {
  const field = block.subarray(offset, offset + length);
  const n = ((field[0] ?? 0) & 0x80) !== 0 ? readBase256(field) : parseOctal(readString(block, offset, length));
  if (n === undefined || !Number.isSafeInteger(n)) throw new ArchiveError(`corrupt tar archive: a header's ${what} is not a number`);
  return n;
}

function parseOctal(text: string): number | undefined {
  const digits = text.trim();
  if (digits === '') return 0;
  return /^[0-7]+$/.test(digits) ? parseInt(digits, 8) : undefined;
}

/** The stored checksum against the block's sum, unsigned or (as some old tars sum) signed. */
function checksumOk(block: Buffer): boolean {
  const stored = parseOctal(readString(block, 148, 8));
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < TAR_BLOCK; i++) {
    const b = i >= 148 && i < 156 ? 0x20 : (block[i] ?? 0);
    unsigned += b;
    signed += b > 127 ? b - 256 : b;
  }
  return stored === unsigned || stored === signed;
}

/** What one header block says, before pax or GNU long names override it. */
export interface RawHeader {
  readonly name: string;
  readonly typeflag: string;
  readonly mode: number;
  readonly size: number;
  readonly mtimeSecs: number;
  readonly linkname: string;
}

export function decodeTarHeader(block: Buffer): RawHeader {
  if (!checksumOk(block)) throw new ArchiveError('not a tar archive, or a corrupt one: a header checksum does not match');
  const name = readString(block, 0, 100);
  // only POSIX ustar has a prefix field; GNU's own format keeps times there
  const prefix = block.subarray(257, 263).toString('latin1') === 'ustar\0' ? readString(block, 345, 155) : '';
  const size = readNumber(block, 124, 12, 'size');
  if (size < 0) throw new ArchiveError('corrupt tar archive: a header has a negative size');
  return {
    name: prefix ? `${prefix}/${name}` : name,
    typeflag: String.fromCharCode(block[156] ?? 0),
    mode: readNumber(block, 100, 8, 'mode'),
    size,
    mtimeSecs: readNumber(block, 136, 12, 'mtime'),
    linkname: readString(block, 157, 100),
  };
}

export function isZeroBlock(block: Buffer): boolean {
  return block.every((b) => b === 0);
}

/** The records of a pax extended header body (`<len> key=value\n`…). */
export function parsePax(body: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  let pos = 0;
  while (pos < body.length) {
    const space = body.indexOf(0x20, pos);
    const digits = body.subarray(pos, space === -1 ? pos : space).toString('latin1');
    const len = /^\d+$/.test(digits) ? Number(digits) : 0;
    // a record holds at least its length, a space and its newline
    if (space === -1 || len <= space - pos + 1 || pos + len > body.length || body[pos + len - 1] !== 0x0a)
      throw new ArchiveError('corrupt tar archive: a pax header record is malformed');
    const record = body.subarray(space + 1, pos + len - 1).toString('utf8');
    const eq = record.indexOf('=');
    if (eq > 0) out.set(record.slice(0, eq), record.slice(eq + 1));
    pos += len;
  }
  return out;
}

/** A pax `size` record, which overrides the header's. */
export function paxSize(value: string): number {
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n)) throw new ArchiveError(`corrupt tar archive: a pax size record holds "${value.slice(0, 20)}"`);
  return n;
}

export function typeOf(typeflag: string, name: string): TarEntryType {
  switch (typeflag) {
    case '0':
    case '\0':
    case '7':
      // pre-POSIX archives mark a directory only by the trailing slash
      return name.endsWith('/') ? 'dir' : 'file';
    case '5':
      return 'dir';
    case '2':
      return 'symlink';
    case '1':
      return 'hardlink';
    default:
      return 'other';
  }
}

/**
 * Types whose size field says nothing about a body (as Go's archive/tar and Python's tarfile
 * read them): links, devices, directories and FIFOs. Any other type is followed by `size` bytes.
 */
const HEADER_ONLY_TYPEFLAGS = new Set(['1', '2', '3', '4', '5', '6']);

/** How many body bytes follow a header with this typeflag and size. */
export function bodySize(typeflag: string, size: number): number {
  return HEADER_ONLY_TYPEFLAGS.has(typeflag) ? 0 : size;
}

/**
 * An entry's name as a normalised relative path. Refused: an absolute path, a `..` segment and
 * a NUL, so no entry can name a place outside the directory it is unpacked in.
 */
export function entryPath(name: string): string {
  if (name.startsWith('/')) throw new ArchiveError(`tar entry "${name}" is an absolute path`);
  if (name.includes('\0')) throw new ArchiveError(`tar entry ${JSON.stringify(name)} holds a NUL`);
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw new ArchiveError(`tar entry "${name}" leaves the directory it is unpacked in`);
  return parts.join('/');
}

import {
  ArchiveError,
  bodySize,
  decodeTarHeader,
  entryPath,
  isZeroBlock,
  MAX_TAR_META_BYTES,
  paxSize,
  parsePax,
  TAR_BLOCK,
  tarPadding,
  typeOf,
  type TarEntry,
} from './tar-format';

/** Bytes of a stream read by count, whatever sizes its chunks come in. */
class ByteSource {
  readonly #it: AsyncIterator<Uint8Array>;
  #buf: Buffer = Buffer.alloc(0);
  #ended = false;

  constructor(source: AsyncIterable<Uint8Array>) {
    this.#it = source[Symbol.asyncIterator]();
  }

  async #fill(): Promise<boolean> {
    if (this.#ended) return false;
    const r = await this.#it.next();
    if (r.done) {
      this.#ended = true;
      return false;
    }
    const chunk = Buffer.isBuffer(r.value) ? r.value : Buffer.from(r.value.buffer, r.value.byteOffset, r.value.byteLength);
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    return true;
  }

  /** `n` bytes, or fewer only where the stream ends. */
  async read(n: number): Promise<Buffer> {
    while (this.#buf.length < n && (await this.#fill()));
    const out = this.#buf.subarray(0, n);
    this.#buf = this.#buf.subarray(out.length);
    return out;
  }

  /** Up to `max` bytes, as many as have arrived (at least one); a stream that ends first is a truncated archive. */
  async some(max: number): Promise<Buffer> {
    if (this.#buf.length === 0 && !(await this.#fill())) throw new ArchiveError('truncated tar archive: an entry ends early');
    const piece = this.#buf.subarray(0, Math.min(max, this.#buf.length));
    this.#buf = this.#buf.subarray(piece.length);
    return piece;
  }

  async skip(n: number): Promise<void> {
    for (let left = n; left > 0;) left -= (await this.some(left)).length;
  }

  /** Closes the underlying stream early (an archive given up on, or ended before the stream). */
  async close(): Promise<void> {
    await this.#it.return?.();
  }
}

export interface TarItem {
  readonly entry: TarEntry;
  /** The entry's bytes, read as they arrive; what is not read is skipped before the next entry. */
  readonly body: AsyncIterable<Buffer>;
}

async function readMeta(src: ByteSource, size: number): Promise<Buffer> {
  if (size > MAX_TAR_META_BYTES)
    throw new ArchiveError(`tar archive has a ${size}-byte extended header; at most ${MAX_TAR_META_BYTES} are read`);
  const body = await src.read(size);
  if (body.length < size) throw new ArchiveError('truncated tar archive: an extended header ends early');
  await src.skip(tarPadding(size).length);
  return body;
}

/** What pax extended headers and GNU long names say of the entry after them. */
interface Pending {
  path?: string;
  linkname?: string;
  size?: number;
}

/** Reads a metadata entry (`x`, `g`, `L`, `K`) into `pending`; false for any other typeflag. */
async function readMetaEntry(src: ByteSource, typeflag: string, size: number, pending: Pending): Promise<boolean> {
  if (typeflag === 'x' || typeflag === 'g') {
    const pax = parsePax(await readMeta(src, size));
    // a global header (`g`) carries nothing an unpacker here uses: it is read only to be checked
    if (typeflag === 'g') return true;
    const path = pax.get('path');
    const linkname = pax.get('linkpath');
    const paxSizeText = pax.get('size');
    if (path !== undefined) pending.path = path;
    if (linkname !== undefined) pending.linkname = linkname;
    if (paxSizeText !== undefined) pending.size = paxSize(paxSizeText);
    return true;
  }
  if (typeflag === 'L' || typeflag === 'K') {
    const text = (await readMeta(src, size)).toString('utf8').replace(/\0+$/, '');
    if (typeflag === 'L') pending.path = text;
    else pending.linkname = text;
    return true;
  }
  return false;
}

/**
 * The entries of a tar stream in order, each body read as it arrives: nothing is buffered past
 * one block, a bounded extended header (MAX_TAR_META_BYTES) and the piece being read. Pax
 * extended headers (`x`) and GNU long names (`L`, `K`) apply to the entry after them. Every
 * path is checked (entryPath): an absolute one, a `..` or a NUL stops the archive with an
 * ArchiveError, as do a bad checksum and a stream cut short. The archive ends at its first zero
 * block (the stream is then closed, what follows unread), or at the end of the stream.
 */
export async function* readTar(source: AsyncIterable<Uint8Array>): AsyncGenerator<TarItem> {
  const src = new ByteSource(source);
  let pending: Pending = {};
  try {
    for (;;) {
      const block = await src.read(TAR_BLOCK);
      if (block.length === 0 || isZeroBlock(block)) return;
      if (block.length < TAR_BLOCK) throw new ArchiveError('truncated tar archive: a header ends early');
      const raw = decodeTarHeader(block);
      if (await readMetaEntry(src, raw.typeflag, raw.size, pending)) continue;
      const name = pending.path ?? raw.name;
      const type = typeOf(raw.typeflag, name);
      const size = bodySize(raw.typeflag, pending.size ?? raw.size);
      const entry: TarEntry = {
        path: entryPath(name),
        type,
        mode: raw.mode,
        // a pre-POSIX directory (a regular file's typeflag, a trailing slash) may still have a body to skip
        size: type === 'dir' ? 0 : size,
        mtimeSecs: raw.mtimeSecs,
        linkname: type === 'symlink' || type === 'hardlink' ? (pending.linkname ?? raw.linkname) : '',
      };
      pending = {};
      let left = size;
      // no return(): a reader that stops early leaves the rest to be skipped here, not lost
      const chunks: AsyncIterator<Buffer> = {
        next: async () => {
          if (left === 0) return { done: true, value: undefined };
          const piece = await src.some(left);
          left -= piece.length;
          return { done: false, value: piece };
        },
      };
      yield { entry, body: { [Symbol.asyncIterator]: () => chunks } };
      await src.skip(left + tarPadding(size).length);
    }
  } finally {
    await src.close();
  }
}

import {
  ArchiveError,
  decodeTarHeader,
  encodeTarHeader,
  entryPath,
  isArchiveError,
  parsePax,
  paxSize,
  TAR_BLOCK,
  tarPadding,
  type TarHeaderEntry,
  writeChecksum,
} from './tar-format';

const file = (path: string, extra: Partial<TarHeaderEntry> = {}): TarHeaderEntry => ({
  path,
  type: 'file',
  mode: 0o644,
  size: 0,
  mtimeSecs: 1_700_000_000,
  ...extra,
});

/** The blocks of a header: the pax body (if any) and the decoded ustar block that ends it. */
function split(header: Buffer): {
  pax: Map<string, string> | undefined;
  paxHeader: string | undefined;
  main: ReturnType<typeof decodeTarHeader>;
} {
  expect(header.length % TAR_BLOCK).toBe(0);
  const main = decodeTarHeader(header.subarray(header.length - TAR_BLOCK));
  if (header.length === TAR_BLOCK) return { pax: undefined, paxHeader: undefined, main };
  const first = decodeTarHeader(header.subarray(0, TAR_BLOCK));
  return { pax: parsePax(header.subarray(TAR_BLOCK, TAR_BLOCK + first.size)), paxHeader: `${first.typeflag} ${first.name}`, main };
}

describe('encodeTarHeader', () => {
  it('writes one ustar block that decodes back: name, mode, size, mtime and typeflag', () => {
    const { pax, main } = split(encodeTarHeader(file('top/a.txt', { mode: 0o100755, size: 1234 })));
    expect(pax).toBeUndefined();
    expect(main).toEqual({ name: 'top/a.txt', typeflag: '0', mode: 0o755, size: 1234, mtimeSecs: 1_700_000_000, linkname: '' });
  });

  it('gives a directory its trailing slash and writes the directory itself as ./', () => {
    expect(split(encodeTarHeader({ ...file('top'), type: 'dir' })).main).toMatchObject({ name: 'top/', typeflag: '5', size: 0 });
    expect(split(encodeTarHeader({ ...file(''), type: 'dir' })).main.name).toBe('./');
  });

  it("splits a path of up to 255 bytes over ustar's prefix and name, without a pax header", () => {
    const long = `${'d'.repeat(60)}/${'e'.repeat(70)}/${'f'.repeat(90)}.txt`;
    const { pax, main } = split(encodeTarHeader(file(long)));
    expect({ pax, name: main.name }).toEqual({ pax: undefined, name: long });
  });

  it('carries in a pax header what ustar cannot: a long component, a non-ASCII path, a long link target, a size past 8 GiB', () => {
    const component = `nested/${'g'.repeat(150)}.txt`;
    const long = split(encodeTarHeader(file(component)));
    expect({ pax: long.pax?.get('path'), header: long.paxHeader }).toEqual({
      pax: component,
      header: `x PaxHeaders/${'g'.repeat(85)}.txt`,
    });
    expect(long.main.name).toBe(component.slice(-100));

    const accented = split(encodeTarHeader(file('top/ünï.txt')));
    expect({ pax: accented.pax?.get('path'), name: accented.main.name }).toEqual({ pax: 'top/ünï.txt', name: 'top/_n_.txt' });

    const target = `${'t'.repeat(120)}/x`;
    const link = split(encodeTarHeader({ ...file('link'), type: 'symlink', linkname: target }));
    expect({ pax: link.pax?.get('linkpath'), linkname: link.main.linkname, typeflag: link.main.typeflag }).toEqual({
      pax: target,
      linkname: '',
      typeflag: '2',
    });

    const huge = split(encodeTarHeader(file('huge', { size: 9 * 1024 ** 3 })));
    expect({ pax: huge.pax?.get('size'), size: huge.main.size }).toEqual({ pax: String(9 * 1024 ** 3), size: 0 });
  });

  it('writes no body size for a directory or a link, and clamps an mtime ustar cannot hold', () => {
    expect(split(encodeTarHeader({ ...file('d', { size: 99 }), type: 'dir' })).main.size).toBe(0);
    expect(split(encodeTarHeader({ ...file('h', { size: 99 }), type: 'hardlink', linkname: 'a' })).main).toMatchObject({
      size: 0,
      linkname: 'a',
    });
    expect(split(encodeTarHeader(file('old', { mtimeSecs: -5 }))).main.mtimeSecs).toBe(0);
  });
});

describe('decodeTarHeader', () => {
  const block = (): Buffer => encodeTarHeader(file('a', { size: 10 }));
  /** A header with bytes rewritten and its checksum made good, as another writer would have written it. */
  const patched = (b: Buffer, at: number, bytes: number[]): Buffer => {
    const out = Buffer.from(b);
    out.set(bytes, at);
    writeChecksum(out);
    return out;
  };

  it("reads GNU's base-256 numbers, positive and negative", () => {
    const size = [0x80, ...Array<number>(6).fill(0), 0x01, 0, 0, 0, 0];
    expect(decodeTarHeader(patched(block(), 124, size)).size).toBe(2 ** 32);
    const before1970 = [0xff, ...Array<number>(10).fill(0xff), 0xfe];
    expect(decodeTarHeader(patched(block(), 136, before1970)).mtimeSecs).toBe(-2);
  });

  it('reads a checksum summed over signed bytes, as some old tars wrote it', () => {
    // one byte past 127 (é in latin1): summed as signed, it counts 256 less
    const b = patched(block(), 0, [0xe9]);
    const unsigned = parseInt(b.toString('ascii', 148, 154), 8);
    b.write(`${(unsigned - 256).toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
    expect(decodeTarHeader(b).size).toBe(10);
  });

  it.each([
    ['a block that is not a header', Buffer.alloc(TAR_BLOCK, 'x'), /checksum/],
    ['a changed byte', Buffer.from(block()).fill(0x41, 10, 11), /checksum/],
    ['a size that is not a number', patched(block(), 124, [...Buffer.from('12345678zz\0')]), /size is not a number/],
    ['a size past what a number holds exactly', patched(block(), 124, [0x80, ...Array<number>(11).fill(0xff)]), /size is not a number/],
    ['a negative size', patched(block(), 124, [0xff, ...Array<number>(11).fill(0xff)]), /negative size/],
  ])('refuses %s with an ArchiveError', (_what, b, message) => {
    expect(() => decodeTarHeader(b)).toThrow(ArchiveError);
    expect(() => decodeTarHeader(b)).toThrow(message);
  });
});

describe('parsePax', () => {
  it('reads records of any length, a value with spaces and = in it, and a multi-byte one', () => {
    const body = Buffer.from('18 path=a b=c.txt\n14 path=ünï\n16 mtime=1.5000\n');
    expect([...parsePax(body)]).toEqual([
      ['path', 'ünï'],
      ['mtime', '1.5000'],
    ]);
    expect(parsePax(Buffer.from('18 path=a b=c.txt\n')).get('path')).toBe('a b=c.txt');
  });

  it.each([
    ['no length', 'path=a\n'],
    ['a length past the body', '99 path=a\n'],
    ['a length that misses the newline', '9 path=ab\n'],
    ['a length of zero after a good record', '9 path=a\n0 '],
    ['a length that is not decimal', '0x9 path=a\n'],
  ])('refuses a record with %s', (_what, text) => {
    expect(() => parsePax(Buffer.from(text))).toThrow(/pax header record is malformed/);
  });

  it('refuses a size record that is not a whole number', () => {
    expect(paxSize('8589934592')).toBe(8589934592);
    for (const bad of ['', '-1', '1e3', '12.5', '99999999999999999999']) expect(() => paxSize(bad)).toThrow(ArchiveError);
  });
});

describe('entryPath', () => {
  it('normalises a name to a relative path without ., empty segments or a trailing slash', () => {
    expect(['./a.txt', './', 'top//sub/./', 'a..b/..c'].map(entryPath)).toEqual(['a.txt', '', 'top/sub', 'a..b/..c']);
  });

  it.each([
    ['/etc/passwd', /absolute path/],
    ['../evil', /leaves the directory/],
    ['top/../../evil', /leaves the directory/],
    ['a\0b', /holds a NUL/],
  ])('refuses %j with an ArchiveError, which isArchiveError finds through wrapping', (name, message) => {
    let refusal: unknown;
    try {
      entryPath(name);
    } catch (err) {
      refusal = err;
    }
    expect((refusal as Error).message).toMatch(message);
    expect(isArchiveError(new Error('wrapped', { cause: refusal }))).toBe(true);
    expect(isArchiveError(new Error(String(message)))).toBe(false);
  });
});

describe('tarPadding', () => {
  it('rounds a body up to whole blocks', () => {
    expect([0, 1, 511, 512, 513].map((n) => tarPadding(n).length)).toEqual([0, 511, 1, 0, 511]);
  });
});

import { fnv1a32, fnv1a64, nameHash } from './fnv1a';
import { sandboxUid, uuidV5 } from './stable-uid';

describe('FNV-1a', () => {
  it('64-bit: offset basis for the empty string, and golden values computed independently', () => {
    expect(fnv1a64('')).toBe('14695981039346656037');
    expect(fnv1a64('ns/s1|sb_abc123|Running|ns/claim-1|10.1.2.3:7777|2026-08-17T12:00:00Z')).toBe('16447397044017641858');
  });

  it('hashes UTF-8 bytes, not UTF-16 code units', () => {
    // U+00E9 is c3 a9 in UTF-8 (golden value from an independent implementation).
    expect(fnv1a64('\u00e9')).toBe('775207407765167617');
    expect(fnv1a32('\u00e9')).toBe(fnv1a32('\u00e9'.normalize('NFC')));
  });

  it('64-bit equals the definition (BigInt over the TextEncoder bytes) for any string, astral and lone surrogates included', () => {
    const definition = (str: string): string => {
      let h = 14695981039346656037n;
      for (const b of new TextEncoder().encode(str)) h = ((h ^ BigInt(b)) * 1099511628211n) & ((1n << 64n) - 1n);
      return h.toString(10);
    };
    const pieces = [
      'a',
      'Z',
      '/',
      '|',
      '\u00e9',
      '\u07ff',
      '\u0800',
      '\uffff',
      '\u{1f600}',
      '\u{10ffff}',
      '\ud800',
      '\udfff',
      '\u0000',
      '\u007f',
    ];
    let seed = 7;
    const next = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (let n = 0; n < 500; n++) {
      const str = Array.from({ length: next() % 40 }, () => pieces[next() % pieces.length]).join('');
      expect(fnv1a64(str)).toBe(definition(str));
    }
    // a lone high surrogate at the end, and one before a character that is not its pair
    for (const str of ['x\ud83d', '\ud83dx', '\ude00\ud83d']) expect(fnv1a64(str)).toBe(definition(str));
  });

  it('32-bit NameHash is 8 lowercase hex digits (upstream controllers.NameHash)', () => {
    expect(nameHash('my-pool')).toBe('244dc158');
    expect(nameHash('')).toBe('811c9dc5');
  });
});

describe('stable uids', () => {
  it('is an RFC 9562 UUIDv5, equal to an independent implementation', () => {
    expect(sandboxUid('n1', 'sb_abc123')).toBe('5e120815-592a-502c-ae16-d3a937a9c44c');
    expect(uuidV5('x')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('is the same for the same (node, claim id) and differs otherwise', () => {
    expect(sandboxUid('n1', 'sb_1')).toBe(sandboxUid('n1', 'sb_1'));
    expect(sandboxUid('n1', 'sb_1')).not.toBe(sandboxUid('n2', 'sb_1'));
    expect(sandboxUid('n1', 'sb_1')).not.toBe(sandboxUid('n1', 'sb_2'));
  });

  it('falls back to the name when the node has not published an id yet', () => {
    expect(sandboxUid('n1', '', 'ns/a')).toBe(sandboxUid('n1', '', 'ns/a'));
    expect(sandboxUid('n1', '', 'ns/a')).not.toBe(sandboxUid('n1', '', 'ns/b'));
  });
});

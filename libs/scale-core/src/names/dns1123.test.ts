import { isDns1123Label, isDns1123Subdomain } from './dns1123';

describe('DNS-1123 names', () => {
  it('accepts labels of lowercase alphanumerics and inner dashes, up to 63 characters', () => {
    for (const ok of ['a', 'a-b', '0abc9', 'x'.repeat(63)]) expect(isDns1123Label(ok)).toBe(true);
    for (const bad of ['', '-a', 'a-', 'A', 'a.b', 'a_b', 'x'.repeat(64)]) expect(isDns1123Label(bad)).toBe(false);
  });

  it('accepts dotted subdomains up to 253 characters', () => {
    for (const ok of ['a', 'a.b', 'my-pool.v1', `${'x'.repeat(63)}.${'y'.repeat(63)}`, 'a'.repeat(253)])
      expect(isDns1123Subdomain(ok)).toBe(true);
    for (const bad of ['', '.a', 'a.', 'a..b', 'A.b', 'a/b', 'a:1', 'a'.repeat(254)]) expect(isDns1123Subdomain(bad)).toBe(false);
  });
});

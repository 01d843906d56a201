import { SecretTokens } from './secret-tokens';

describe('SecretTokens', () => {
  it('hands out 32-hex-character tokens, none twice, across several refills', () => {
    const tokens = new SecretTokens();
    const seen = new Set<string>();
    for (let i = 0; i < 1_000; i++) {
      const t = tokens.next();
      expect(t).toMatch(/^[0-9a-f]{32}$/);
      seen.add(t);
    }
    expect(seen.size).toBe(1_000);
  });

  it('draws independent sources apart', () => {
    expect(new SecretTokens().next()).not.toBe(new SecretTokens().next());
  });
});

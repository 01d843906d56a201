import { findDuplicateKey } from './json-dupes';

describe('findDuplicateKey', () => {
  it.each([
    ['{"a":1,"b":2}', undefined],
    ['{"a":1,"a":2}', 'a'],
    ['{"pools":[{"template":"t","warm":1},{"template":"u","warm":2}]}', undefined],
    ['{"pools":[{"template":"t","warm":1,"warm":3}]}', 'warm'],
    ['{"a":{"x":1},"b":{"x":2}}', undefined],
    ['{"s":"a\\"b,\\"s\\":1","t":1}', undefined],
    ['{"a\\u0062":1,"ab":2}', 'ab'],
    ['[{"a":1},{"a":1}]', undefined],
  ])('%s → %s', (text, dup) => {
    expect(findDuplicateKey(text)).toBe(dup);
  });
});

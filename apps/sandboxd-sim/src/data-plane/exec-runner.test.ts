import { guestEnv } from './exec-runner';

describe('guestEnv', () => {
  it('keeps a caller variable named __proto__ or constructor as a variable, never as the prototype', () => {
    const env = guestEnv(JSON.parse('{"__proto__":"x","constructor":"y","A":"1"}') as Record<string, string>);
    expect(Object.getPrototypeOf(env)).toBeNull();
    expect(Object.entries(env).filter(([k]) => ['__proto__', 'constructor', 'A'].includes(k))).toEqual([
      ['__proto__', 'x'],
      ['constructor', 'y'],
      ['A', '1'],
    ]);
    expect(typeof env.PATH).toBe('string');
  });
});

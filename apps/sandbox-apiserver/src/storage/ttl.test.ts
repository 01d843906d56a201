import { deriveTtlSeconds } from './ttl';

const now = new Date('2026-08-17T10:00:00Z');
const sb = (shutdownTime?: string, ttl?: string) => ({
  metadata: { name: 'x', ...(ttl === undefined ? {} : { annotations: { 'sandbox.cocoonstack.io/ttl-seconds': ttl } }) },
  spec: {
    podTemplate: { spec: { containers: [] } },
    ...(shutdownTime ? { shutdownTime } : {}),
    shutdownPolicy: 'Retain' as const,
    operatingMode: 'Running' as const,
  },
});

describe('deriveTtlSeconds', () => {
  it.each([
    ['shutdownTime now+90 s', sb('2026-08-17T10:01:30Z'), 90],
    ['shutdownTime now+90.5 s rounds up', sb('2026-08-17T10:01:30.500Z'), 91],
    ['annotation 120', sb(undefined, '120'), 120],
    ['spec wins over the annotation', sb('2026-08-17T11:00:00Z', '10'), 3600],
    ['annotation 0', sb(undefined, '0'), 0],
    ['neither', sb(), 0],
  ])('%s', (_name, s, want) => {
    expect(deriveTtlSeconds(s, now)).toBe(want);
  });

  it.each([
    ['shutdownTime = now', sb('2026-08-17T10:00:00Z')],
    ['annotation banana', sb(undefined, 'banana')],
    ['annotation -5', sb(undefined, '-5')],
  ])('rejects %s with a 400', (_name, s) => {
    expect(() => deriveTtlSeconds(s, now)).toThrow(expect.objectContaining({ reason: 'BadRequest', code: 400 }));
  });
});

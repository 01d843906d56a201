import { z } from 'zod';
import { booleanFlag, isConfigError, isHelp, jsonFlag, parseFlags } from './flags';

const schema = z.object({
  publishInterval: z.coerce.number().int().positive().default(30).describe('Seconds between publishes'),
  leaderElect: booleanFlag(false).describe('Use a Lease'),
  nodeName: z.string().min(1).describe('This node'),
});
const opts = { program: 'x', summary: 'test', env: {} };

describe('parseFlags', () => {
  it('reads --a=b, --a b and bare booleans', () => {
    const c = parseFlags(schema, { ...opts, argv: ['--publish-interval=5', '--node-name', 'n1', '--leader-elect'] });
    expect(c).toEqual({ publishInterval: 5, leaderElect: true, nodeName: 'n1' });
  });
  it('falls back to SANDBOX_SCALE_ env and defaults', () => {
    const c = parseFlags(schema, { ...opts, argv: [], env: { SANDBOX_SCALE_NODE_NAME: 'n2' } });
    expect(c).toEqual({ publishInterval: 30, leaderElect: false, nodeName: 'n2' });
  });
  it('names the bad flag', () => {
    expect.assertions(3);
    try {
      parseFlags(schema, { ...opts, argv: ['--publish-interval=-1', '--node-name=n'] });
    } catch (err) {
      expect(isConfigError(err)).toBe(true);
      expect((err as Error).message).toContain('--publish-interval');
      expect((err as { flag?: string }).flag).toBe('--publish-interval');
    }
  });
  it('rejects unknown flags', () => {
    expect(() => parseFlags(schema, { ...opts, argv: ['--nope=1'] })).toThrow(/unknown flag --nope/);
  });
  it('reports every problem at once, naming the first bad flag', () => {
    expect.assertions(2);
    try {
      parseFlags(schema, { ...opts, argv: ['--nope', 'value', 'stray', '--publish-interval=-1', '--node-name'] });
    } catch (err) {
      expect((err as Error).message).toBe(
        'unknown flag --nope (see --help); unexpected argument "stray": flags look like --name=value; flag --node-name needs a value; ' +
          'invalid configuration: --publish-interval: Too small: expected number to be >0; --node-name: Invalid input: expected string, received undefined',
      );
      expect((err as { flag?: string }).flag).toBe('--nope');
    }
  });
  it('renders help with env names and defaults', () => {
    const r = parseFlags(schema, { ...opts, argv: ['--help'] });
    expect(isHelp(r)).toBe(true);
    if (isHelp(r)) {
      expect(r.help).toContain('--publish-interval <value>');
      expect(r.help).toContain('SANDBOX_SCALE_PUBLISH_INTERVAL');
      expect(r.help).toContain('(default 30)');
    }
  });
  it('reads a JSON flag through its schema, empty as unset, and names the flag on bad JSON', () => {
    const json = z.object({
      pools: jsonFlag(z.array(z.object({ name: z.string() })))
        .optional()
        .describe('JSON'),
    });
    expect(parseFlags(json, { ...opts, argv: ['--pools=[{"name":"a"}]'] })).toEqual({ pools: [{ name: 'a' }] });
    expect(parseFlags(json, { ...opts, argv: ['--pools='] })).toEqual({ pools: undefined });
    expect(parseFlags(json, { ...opts, argv: [] })).toEqual({});
    for (const bad of ['--pools=[{', '--pools=[{"name":1}]']) expect(() => parseFlags(json, { ...opts, argv: [bad] })).toThrow(/--pools/);
  });
});

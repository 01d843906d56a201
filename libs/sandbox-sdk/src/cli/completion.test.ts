import { complete, DIRECTIVE, formatCompletion, type CompletionLookup } from './completion';

const asked: string[] = [];
const lookup: CompletionLookup = {
  pools: async (ns) => (asked.push(`pools:${ns ?? ''}`), ['python-agent', 'node-agent']),
  sandboxes: async (ns) => (asked.push(`sandboxes:${ns ?? ''}`), ['sb-1', 'sb-2', 'other']),
  namespaces: async () => ['default', 'team-a'],
  contexts: () => ['dev', 'prod'],
};
const refusing: CompletionLookup = {
  pools: () => Promise.reject(new Error('forbidden')),
  sandboxes: () => Promise.reject(new Error('forbidden')),
  namespaces: () => Promise.reject(new Error('forbidden')),
  contexts: () => [],
};

describe('kubectl sandbox completion', () => {
  beforeEach(() => (asked.length = 0));

  it.each([
    [[''], { items: expect.arrayContaining(['claim', 'exec', 'list', 'help']) as unknown, directive: DIRECTIVE.noFileComp }],
    [['ex'], { items: ['exec'], directive: DIRECTIVE.noFileComp }],
    [['p'], { items: ['pause', 'promote', 'port-forward'], directive: DIRECTIVE.noFileComp }],
    [['claim', ''], { items: ['python-agent', 'node-agent'], directive: DIRECTIVE.noFileComp }],
    [['exec', 'sb'], { items: ['sb-1', 'sb-2'], directive: DIRECTIVE.noFileComp }],
    [['list', '-o', 'w'], { items: ['wide'], directive: DIRECTIVE.noFileComp }],
    [['-n', 't'], { items: ['team-a'], directive: DIRECTIVE.noFileComp }],
    [['list', '--context', ''], { items: ['dev', 'prod'], directive: DIRECTIVE.noFileComp }],
    [['list', '--no-h'], { items: ['--no-headers'], directive: DIRECTIVE.noFileComp }],
    [['completion', ''], { items: ['bash', 'zsh'], directive: DIRECTIVE.noFileComp }],
    [['cp', 'sb-'], { items: ['sb-1:', 'sb-2:'], directive: DIRECTIVE.noSpace }],
    [['cp', './'], { items: [], directive: DIRECTIVE.default }],
    [['exec', 'sb-1', '--', 'py'], { items: [], directive: DIRECTIVE.default }],
    [['claim', '--token-file', ''], { items: [], directive: DIRECTIVE.default }],
    [['exec', 'sb-1', ''], { items: [], directive: DIRECTIVE.noFileComp }],
  ])('completes %j', async (words, expected) => {
    expect(await complete(words, lookup)).toEqual(expected);
  });

  it('looks names up in the namespace the line names', async () => {
    await complete(['exec', '-n', 'team-a', ''], lookup);
    await complete(['claim', '--namespace=team-b', ''], lookup);
    expect(asked).toEqual(['sandboxes:team-a', 'pools:team-b']);
  });

  it('answers nothing rather than an error when the cluster refuses a lookup', async () => {
    expect(await complete(['exec', ''], refusing)).toEqual({ items: [], directive: DIRECTIVE.noFileComp });
    expect(await complete(['cp', ''], refusing)).toEqual({ items: [], directive: DIRECTIVE.default });
  });

  it("prints cobra's protocol: one candidate a line, then :DIRECTIVE", () => {
    expect(formatCompletion({ items: ['a', 'b'], directive: 4 })).toBe('a\nb\n:4\n');
  });
});

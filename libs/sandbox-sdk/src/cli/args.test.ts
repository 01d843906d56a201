import { parseInvocation, UsageError } from './args';

describe('kubectl sandbox arguments', () => {
  it('parses a claim with its flags', () => {
    const inv = parseInvocation([
      'claim',
      'python-agent',
      '--fast',
      '-n',
      'team',
      '--token-file',
      '/tmp/t',
      '-o',
      'yaml',
      '--request-timeout',
      '30s',
    ]);
    expect(inv).toMatchObject({
      command: 'claim',
      target: 'python-agent',
      fast: true,
      namespace: 'team',
      tokenFile: '/tmp/t',
      output: 'yaml',
      timeoutMs: 30_000,
    });
  });

  it.each([
    [['pause'], 'pause needs NAME'],
    [['frobnicate', 'x'], 'unknown command "frobnicate"'],
    [['fork', 'x', '--count', '0'], '--count must be a whole number >= 1, got "0"'],
    [['stats', 'x', '-o', 'wide'], '--output must be json or yaml, got "wide"'],
    [['pause', 'x', '-A'], '-A applies to list only'],
    [['restore', 'x', '--snapshot', 'cp_1'], 'restore needs --snapshot ID and --name NEW'],
    [['claim', 'p', '--show-token', '--token-file', 'f'], '--show-token and --token-file exclude each other'],
    [['stats', 'x', '--request-timeout', 'soon'], '--request-timeout "soon" is not a duration like 30s or 2m'],
  ])('refuses %j', (argv, message) => {
    expect(() => parseInvocation(argv)).toThrow(UsageError);
    expect(() => parseInvocation(argv)).toThrow(message);
  });

  it('asks for help with no command', () => {
    expect(parseInvocation([]).command).toBe('help');
    expect(parseInvocation(['--help']).command).toBe('help');
  });
});

import { parseCopySpec, parseInvocation, parsePortSpec, UsageError } from './args';

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
    [['stats', 'x', '-o', 'table'], '--output must be one of json, yaml, name, wide, got "table"'],
    [['token', 'x', '-o', 'name'], '--output of token must be json or yaml, got "name"'],
    [['exec', 'x', '-o', 'json', '--', 'ls'], '--output does not apply to exec'],
    [['exec', 'x', '--no-headers', '--', 'ls'], '--no-headers applies to commands that print objects, not exec'],
    [['stats', 'x', '-l', 'a=b'], '-l applies to list only'],
    [['list', '-l', 'a in (b'], '-l "a in (b" is not a label selector'],
    [['completion', 'fish'], 'completion takes bash or zsh, got "fish"'],
    [['completion'], 'completion needs bash or zsh'],
    [['pause', 'x', '-A'], '-A applies to list only'],
    [['restore', 'x', '--snapshot', 'cp_1'], 'restore needs --snapshot ID and --name NEW'],
    [['claim', 'p', '--show-token', '--token-file', 'f'], '--show-token and --token-file exclude each other'],
    [['stats', 'x', '--request-timeout', 'soon'], '--request-timeout "soon" is not a duration like 30s or 2m'],
  ])('refuses %j', (argv, message) => {
    expect(() => parseInvocation(argv)).toThrow(UsageError);
    expect(() => parseInvocation(argv)).toThrow(message);
  });

  it("asks for help with no command, and for one command's page with it", () => {
    expect(parseInvocation([])).toMatchObject({ command: 'help', helpFor: undefined });
    expect(parseInvocation(['--help'])).toMatchObject({ command: 'help', helpFor: undefined });
    expect(parseInvocation(['exec', '--help'])).toMatchObject({ command: 'help', helpFor: 'exec' });
    expect(parseInvocation(['help', 'cp'])).toMatchObject({ command: 'help', helpFor: 'cp' });
    expect(parseInvocation(['claim', '-h'])).toMatchObject({ command: 'help', helpFor: 'claim' });
  });

  it('takes -o name|wide, --no-headers and -l where a command prints objects', () => {
    expect(parseInvocation(['list', '-l', 'team=a,tier!=x', '-o', 'wide', '--no-headers'])).toMatchObject({
      command: 'list',
      labelSelector: 'team=a,tier!=x',
      output: 'wide',
      noHeaders: true,
    });
    expect(parseInvocation(['pause', 'x', '-o', 'name']).output).toBe('name');
    expect(parseInvocation(['token', 'x', '-o', 'yaml']).output).toBe('yaml');
    expect(parseInvocation(['completion', 'zsh'])).toMatchObject({ command: 'completion', target: 'zsh' });
  });

  it("takes exec's command from after --, flags included, and its own flags from before", () => {
    const inv = parseInvocation([
      'exec',
      'sb',
      '--timeout',
      '30s',
      '-n',
      'team',
      '--env',
      'A=1',
      '--env',
      'B=x=y',
      '--',
      'python3',
      '-c',
      'print(1)',
      '--timeout',
      '-n',
    ]);
    expect(inv).toMatchObject({
      command: 'exec',
      target: 'sb',
      namespace: 'team',
      execTimeoutMs: 30_000,
      argv: ['python3', '-c', 'print(1)', '--timeout', '-n'],
    });
    expect({ ...inv.env }).toEqual({ A: '1', B: 'x=y' });
    expect(parseInvocation(['exec', 'sb', '--', '--']).argv).toEqual(['--']);
  });

  it("takes e2b-key's ServiceAccount, the key's lifetime in seconds and e2b's URL", () => {
    const inv = parseInvocation(['e2b-key', 'agent', '-n', 'team', '--duration', '2h', '--url', 'https://e2b.example:8443']);
    expect(inv).toMatchObject({
      command: 'e2b-key',
      target: 'agent',
      namespace: 'team',
      keySeconds: 7200,
      e2bUrl: 'https://e2b.example:8443',
    });
    expect(parseInvocation(['e2b-key', 'agent']).keySeconds).toBeUndefined();
  });

  it('keeps an env key named __proto__ as a variable, not a prototype', () => {
    const env = parseInvocation(['exec', 'sb', '--env', '__proto__=x', '--', 'env']).env ?? {};
    expect(Object.keys(env)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(env)).toBeNull();
  });

  it('parses cp sides: NAME:PATH and NAMESPACE/NAME:PATH are a sandbox, anything else local', () => {
    expect(parseInvocation(['cp', './dir', 'sb:/work/dir']).copy).toEqual({
      from: { kind: 'local', path: './dir' },
      to: { kind: 'remote', namespace: undefined, name: 'sb', path: '/work/dir' },
    });
    expect(parseInvocation(['cp', 'team/sb-1.x:work/a', 'out']).copy).toEqual({
      from: { kind: 'remote', namespace: 'team', name: 'sb-1.x', path: 'work/a' },
      to: { kind: 'local', path: 'out' },
    });
    expect(parseCopySpec('/tmp/a:b')).toEqual({ kind: 'local', path: '/tmp/a:b' });
    expect(parseCopySpec('./a:b')).toEqual({ kind: 'local', path: './a:b' });
    expect(parseCopySpec('Upper:x')).toEqual({ kind: 'local', path: 'Upper:x' });
    expect(parseCopySpec('plain')).toEqual({ kind: 'local', path: 'plain' });
  });

  it('parses [LOCAL:]REMOTE as kubectl port-forward does', () => {
    expect(parsePortSpec('8080')).toEqual({ localPort: 8080, remotePort: 8080 });
    expect(parsePortSpec(':8080')).toEqual({ localPort: 0, remotePort: 8080 });
    expect(parsePortSpec('5000:8080')).toEqual({ localPort: 5000, remotePort: 8080 });
    expect(parseInvocation(['port-forward', 'sb', ':18080', '-n', 'team']).ports).toEqual({ localPort: 0, remotePort: 18080 });
  });

  it.each([
    [['exec', 'sb'], 'exec needs -- CMD [ARGS...] after NAME'],
    [['exec', 'sb', '--'], 'exec needs -- CMD [ARGS...] after NAME'],
    [['exec', 'sb', 'ls', '--', 'ls'], 'unexpected argument "ls"'],
    [['exec', '--', 'ls'], 'exec needs NAME'],
    [['exec', 'sb', '--env', 'NOEQUALS', '--', 'env'], '--env takes KEY=VALUE, got "NOEQUALS"'],
    [['exec', 'sb', '--timeout', 'soon', '--', 'ls'], '--timeout "soon" is not a duration like 30s or 2m'],
    [['pause', 'sb', '--', 'ls'], 'unexpected argument "ls" after --'],
    [['pause', 'sb', '--timeout', '3s'], '--timeout applies to exec only'],
    [['cp', 'a'], 'cp needs SRC and DST'],
    [['cp', 'a', 'b'], 'cp copies to or from a sandbox: one side is NAME:PATH'],
    [['cp', 'sb:/a', 'sb2:/b'], 'cp copies between this machine and a sandbox: one side is a local path'],
    [['cp', 'sb:', 'out'], '"sb:": a sandbox path is NAME:PATH, with a PATH'],
    [['cp', 'a', 'sb:/x', 'extra'], 'unexpected argument "extra"'],
    [['port-forward', 'sb'], 'port-forward needs NAME and [LOCAL:]REMOTE'],
    [['port-forward', 'sb', '0'], 'the port must be a port number in 1-65535, got "0"'],
    [['port-forward', 'sb', '70000'], 'the port must be a port number in 1-65535, got "70000"'],
    [['port-forward', 'sb', 'x:80'], 'the local port must be a port number in 1-65535, got "x"'],
    [['port-forward', 'sb', '80:'], 'the remote port must be a port number in 1-65535, got ""'],
    [['e2b-key'], 'e2b-key needs SERVICEACCOUNT'],
    [['e2b-key', 'agent', '--duration', '1m'], '--duration must be at least 10m, got "1m"'],
    [['e2b-key', 'agent', '-o', 'json'], '--output does not apply to e2b-key'],
    [['list', '--url', 'http://x'], '--url applies to e2b-key only'],
  ])('refuses %j', (argv, message) => {
    expect(() => parseInvocation(argv)).toThrow(UsageError);
    expect(() => parseInvocation(argv)).toThrow(message);
  });
});

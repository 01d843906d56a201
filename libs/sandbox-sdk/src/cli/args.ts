import { parseArgs } from 'node:util';
import { parseDuration } from '@sandbox-scale/kube-runtime';
import { parseCopy, parseEnv, parsePortSpec, type CopySpec, type PortSpec } from './data-plane-args';
import { UsageError } from './usage-error';

export { UsageError } from './usage-error';
export { parseCopySpec, parsePortSpec } from './data-plane-args';
export type { CopySpec, PortSpec } from './data-plane-args';

export const COMMANDS = [
  'claim',
  'pause',
  'resume',
  'fork',
  'snapshot',
  'snapshots',
  'restore',
  'promote',
  'stats',
  'token',
  'release',
  'list',
  'exec',
  'cp',
  'port-forward',
] as const;
export type Command = (typeof COMMANDS)[number];

export const USAGE = `Claim and drive sandbox-scale sandboxes.

Usage:
  kubectl sandbox claim POOL [--wait] [--fast] [--name NAME] [--ttl SECONDS] [--show-token | --token-file FILE]
  kubectl sandbox list [-A]
  kubectl sandbox pause NAME
  kubectl sandbox resume NAME
  kubectl sandbox fork NAME [--count N] [--ttl SECONDS]
  kubectl sandbox snapshot NAME [--snapshot-name LABEL]
  kubectl sandbox snapshots NAME
  kubectl sandbox restore NAME --snapshot ID --name NEW [--ttl SECONDS] [--show-token | --token-file FILE]
  kubectl sandbox promote NAME --template TEMPLATE
  kubectl sandbox stats NAME
  kubectl sandbox token NAME          (the claim's sandbox token, from its Secret)
  kubectl sandbox release NAME        (deletes the claim, or the sandbox when no claim holds it)
  kubectl sandbox exec NAME [--timeout 30s] [--cwd DIR] [--env K=V]... -- CMD [ARGS...]
  kubectl sandbox cp LOCAL NAME:PATH  (a file, or a directory as a tar)
  kubectl sandbox cp NAME:PATH LOCAL
  kubectl sandbox port-forward NAME [LOCAL:]REMOTE

NAME is a sandbox (kubectl get sandboxes); a claimed sandbox has its claim's name.
exec exits with the command's exit code. cp copies a directory's contents into PATH (or LOCAL),
as kubectl cp does. port-forward listens on 127.0.0.1:LOCAL (REMOTE alone: the same port;
:REMOTE: a free one) until interrupted.

Flags:
  -n, --namespace NS       namespace (default: the current context's)
  -A, --all-namespaces     list: every namespace
  -o, --output json|yaml   print the object instead of a table
      --kubeconfig FILE    kubeconfig (default: $KUBECONFIG, then ~/.kube/config)
      --context NAME       kubeconfig context (default: the current one)
      --request-timeout D  give up after D (e.g. 30s; claim default 2m)
  claim:
      --fast               the fast path (POST /v1/claims): a warm VM in one round trip
      --wait               wait until the claim is Ready and print where it runs (implied by --fast)
      --fast-path-url URL  the fast path's URL ($SANDBOX_SCALE_FAST_PATH_URL; default: found from its Service)
      --fast-path-ca FILE  CA of its serving certificate ($SANDBOX_SCALE_FAST_PATH_CA_FILE)
      --fast-path-token-file FILE   a token for its audience (default: minted for your ServiceAccount)
      --show-token         print the sandbox token (it is never printed otherwise)
      --token-file FILE    write the sandbox token to FILE (mode 0600)
  exec:
      --timeout D          the command's time limit (e.g. 30s); the node kills it after D
      --cwd DIR            working directory in the sandbox
      --env K=V            add to the command's environment (repeatable)
`;

const OPTIONS = {
  namespace: { type: 'string', short: 'n' },
  'all-namespaces': { type: 'boolean', short: 'A' },
  output: { type: 'string', short: 'o' },
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  'request-timeout': { type: 'string' },
  wait: { type: 'boolean' },
  fast: { type: 'boolean' },
  name: { type: 'string' },
  ttl: { type: 'string' },
  count: { type: 'string' },
  'snapshot-name': { type: 'string' },
  snapshot: { type: 'string' },
  template: { type: 'string' },
  'show-token': { type: 'boolean' },
  'token-file': { type: 'string' },
  'fast-path-url': { type: 'string' },
  'fast-path-ca': { type: 'string' },
  'fast-path-token-file': { type: 'string' },
  timeout: { type: 'string' },
  cwd: { type: 'string' },
  env: { type: 'string', multiple: true },
  help: { type: 'boolean', short: 'h' },
} as const;

export interface Invocation {
  command: Command | 'help';
  /** POOL for claim, NAME for the rest. */
  target: string;
  namespace: string | undefined;
  allNamespaces: boolean;
  output: 'json' | 'yaml' | undefined;
  kubeconfig: string | undefined;
  context: string | undefined;
  timeoutMs: number | undefined;
  wait: boolean;
  fast: boolean;
  name: string | undefined;
  ttlSeconds: number | undefined;
  count: number | undefined;
  snapshotName: string | undefined;
  snapshot: string | undefined;
  template: string | undefined;
  showToken: boolean;
  tokenFile: string | undefined;
  fastPathUrl: string | undefined;
  fastPathCa: string | undefined;
  fastPathTokenFile: string | undefined;
  /** exec: the command and its arguments, everything after `--`. */
  argv: string[];
  /** exec --timeout */
  execTimeoutMs: number | undefined;
  cwd: string | undefined;
  env: Record<string, string> | undefined;
  /** cp: where from and where to; exactly one side is in a sandbox. */
  copy: { from: CopySpec; to: CopySpec } | undefined;
  /** port-forward */
  ports: PortSpec | undefined;
}

function count(flag: string, v: string | undefined, min: number): number | undefined {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v) || Number(v) < min) throw new UsageError(`--${flag} must be a whole number >= ${min}, got "${v}"`);
  return Number(v);
}

const NEEDS_TARGET: Record<Command, string | undefined> = {
  claim: 'POOL',
  pause: 'NAME',
  resume: 'NAME',
  fork: 'NAME',
  snapshot: 'NAME',
  snapshots: 'NAME',
  restore: 'NAME',
  promote: 'NAME',
  stats: 'NAME',
  token: 'NAME',
  release: 'NAME',
  list: undefined,
  exec: 'NAME',
  cp: 'SRC and DST',
  'port-forward': 'NAME',
};

/** What a command takes after its target: cp's DST, port-forward's ports. */
const SECOND: Partial<Record<Command, string>> = { cp: 'SRC and DST', 'port-forward': 'NAME and [LOCAL:]REMOTE' };

/** Splits the positionals at `--`: the plugin's own before it, exec's command after it. */
function split(argv: string[]): { v: ParsedValues; before: string[]; after: string[] } {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true, tokens: true });
  } catch (err) {
    throw new UsageError((err as Error).message, { cause: err });
  }
  const terminator = parsed.tokens.find((t) => t.kind === 'option-terminator');
  const cut = terminator?.index ?? argv.length;
  const before = parsed.tokens.flatMap((t) => (t.kind === 'positional' && t.index < cut ? [t.value] : []));
  return { v: parsed.values, before, after: terminator ? argv.slice(terminator.index + 1) : [] };
}
type ParsedValues = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; strict: true }>>['values'];

function duration(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = parseDuration(text);
  if (ms === undefined) throw new UsageError(`--${flag} "${text}" is not a duration like 30s or 2m`);
  return ms;
}

/** The checks of one command's own arguments and flags. */
function checkCommand(command: Command, v: ParsedValues, rest: { second: string | undefined; after: string[] }): void {
  if (command === 'restore' && (!v.snapshot || !v.name)) throw new UsageError('restore needs --snapshot ID and --name NEW');
  if (command === 'promote' && !v.template) throw new UsageError('promote needs --template TEMPLATE');
  if (v['show-token'] && v['token-file']) throw new UsageError('--show-token and --token-file exclude each other');
  if (command === 'exec' && rest.after.length === 0) throw new UsageError('exec needs -- CMD [ARGS...] after NAME');
  if (command !== 'exec' && rest.after.length > 0) throw new UsageError(`unexpected argument "${rest.after[0] ?? ''}" after --`);
  for (const flag of ['timeout', 'cwd', 'env'] as const)
    if (v[flag] !== undefined && command !== 'exec') throw new UsageError(`--${flag} applies to exec only`);
  const second = SECOND[command];
  if (second && rest.second === undefined) throw new UsageError(`${command} needs ${second}`);
}

export function parseInvocation(argv: string[]): Invocation {
  const { v, before, after } = split(argv);
  const [cmd, target, ...more] = before;
  if (v.help || cmd === undefined || cmd === 'help') return { ...empty(), command: 'help' };
  if (!(COMMANDS as readonly string[]).includes(cmd)) throw new UsageError(`unknown command "${cmd}"; one of ${COMMANDS.join(', ')}`);
  const command = cmd as Command;
  const needs = NEEDS_TARGET[command];
  if (needs && !target) throw new UsageError(`${command} needs ${needs}`);
  const [second, ...extra] = SECOND[command] ? more : [undefined, ...more];
  if (extra.length > 0 || (!needs && target)) throw new UsageError(`unexpected argument "${extra[0] ?? target}"`);
  if (v.output !== undefined && v.output !== 'json' && v.output !== 'yaml')
    throw new UsageError(`--output must be json or yaml, got "${v.output}"`);
  if (v['all-namespaces'] && command !== 'list') throw new UsageError('-A applies to list only');
  if (v['all-namespaces'] && v.namespace) throw new UsageError('-A and -n exclude each other');
  const timeoutMs = duration('request-timeout', v['request-timeout']);
  checkCommand(command, v, { second, after });
  return {
    command,
    target: target ?? '',
    namespace: v.namespace,
    allNamespaces: v['all-namespaces'] ?? false,
    output: v.output as Invocation['output'],
    kubeconfig: v.kubeconfig,
    context: v.context,
    timeoutMs,
    wait: v.wait ?? false,
    fast: v.fast ?? false,
    name: v.name,
    ttlSeconds: count('ttl', v.ttl, 0),
    count: count('count', v.count, 1),
    snapshotName: v['snapshot-name'],
    snapshot: v.snapshot,
    template: v.template,
    showToken: v['show-token'] ?? false,
    tokenFile: v['token-file'],
    fastPathUrl: v['fast-path-url'],
    fastPathCa: v['fast-path-ca'],
    fastPathTokenFile: v['fast-path-token-file'],
    argv: after,
    execTimeoutMs: duration('timeout', v.timeout),
    cwd: v.cwd,
    env: parseEnv(v.env),
    copy: command === 'cp' && target !== undefined && second !== undefined ? parseCopy(target, second) : undefined,
    ports: command === 'port-forward' && second !== undefined ? parsePortSpec(second) : undefined,
  };
}

function empty(): Invocation {
  return {
    command: 'help',
    target: '',
    namespace: undefined,
    allNamespaces: false,
    output: undefined,
    kubeconfig: undefined,
    context: undefined,
    timeoutMs: undefined,
    wait: false,
    fast: false,
    name: undefined,
    ttlSeconds: undefined,
    count: undefined,
    snapshotName: undefined,
    snapshot: undefined,
    template: undefined,
    showToken: false,
    tokenFile: undefined,
    fastPathUrl: undefined,
    fastPathCa: undefined,
    fastPathTokenFile: undefined,
    argv: [],
    execTimeoutMs: undefined,
    cwd: undefined,
    env: undefined,
    copy: undefined,
    ports: undefined,
  };
}

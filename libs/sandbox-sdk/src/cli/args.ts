import { parseArgs } from 'node:util';
import { parseDuration } from '@sandbox-scale/kube-runtime';
import { parseLabelSelector } from '@sandbox-scale/scale-core';
import { parseCopy, parseEnv, parsePortSpec, type CopySpec, type PortSpec } from './data-plane-args';
import { OUTPUT_FORMATS, type OutputFormat } from './output';
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
  'e2b-key',
  'version',
  'completion',
] as const;
export type Command = (typeof COMMANDS)[number];

const OPTIONS = {
  namespace: { type: 'string', short: 'n' },
  'all-namespaces': { type: 'boolean', short: 'A' },
  output: { type: 'string', short: 'o' },
  'no-headers': { type: 'boolean' },
  selector: { type: 'string', short: 'l' },
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
  duration: { type: 'string' },
  url: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Every flag: its long name, its letter, and whether it takes a value (for completion). */
export const OPTION_NAMES: readonly { name: string; short: string | undefined; takesValue: boolean }[] = Object.entries(OPTIONS).map(
  ([name, o]) => ({ name, short: 'short' in o ? o.short : undefined, takesValue: o.type === 'string' }),
);

export interface Invocation {
  command: Command | 'help';
  /** help: the command whose page to print (`kubectl sandbox exec --help`); none: the overview. */
  helpFor: Command | undefined;
  /** POOL for claim, the shell for completion, NAME for the rest. */
  target: string;
  namespace: string | undefined;
  allNamespaces: boolean;
  output: OutputFormat | undefined;
  noHeaders: boolean;
  /** list -l */
  labelSelector: string | undefined;
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
  /** e2b-key --duration, in seconds */
  keySeconds: number | undefined;
  /** e2b-key --url: e2b's API of the cluster */
  e2bUrl: string | undefined;
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
  'e2b-key': 'SERVICEACCOUNT',
  version: undefined,
  completion: 'bash or zsh',
};

/** The commands that print a value, not an object: -o json|yaml only. */
const PRINTS_VALUE: ReadonlySet<Command> = new Set(['token', 'version']);
/** The commands whose output is the guest's, a stream, or a script: no -o. */
const PRINTS_OTHER: ReadonlySet<Command> = new Set(['exec', 'cp', 'port-forward', 'completion', 'e2b-key']);
/** The rest print objects: every -o format, and --no-headers. */
const PRINTS_OBJECTS: ReadonlySet<Command> = new Set(COMMANDS.filter((c) => !PRINTS_VALUE.has(c) && !PRINTS_OTHER.has(c)));

export const SHELLS = ['bash', 'zsh'] as const;

function outputOf(command: Command, v: ParsedValues): OutputFormat | undefined {
  const o = v.output;
  if (v['no-headers'] && !PRINTS_OBJECTS.has(command))
    throw new UsageError(`--no-headers applies to commands that print objects, not ${command}`);
  if (o === undefined) return undefined;
  if (PRINTS_OBJECTS.has(command)) {
    if (!(OUTPUT_FORMATS as readonly string[]).includes(o))
      throw new UsageError(`--output must be one of ${OUTPUT_FORMATS.join(', ')}, got "${o}"`);
    return o as OutputFormat;
  }
  if (PRINTS_VALUE.has(command)) {
    if (o !== 'json' && o !== 'yaml') throw new UsageError(`--output of ${command} must be json or yaml, got "${o}"`);
    return o;
  }
  throw new UsageError(`--output does not apply to ${command}`);
}

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

/** A label selector is checked here, so a typo is a usage error before any request. */
function selectorOf(text: string): void {
  try {
    parseLabelSelector(text);
  } catch (err) {
    throw new UsageError(`-l "${text}" is not a label selector: ${(err as Error).message}`, { cause: err });
  }
}

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
  for (const flag of ['duration', 'url'] as const)
    if (v[flag] !== undefined && command !== 'e2b-key') throw new UsageError(`--${flag} applies to e2b-key only`);
  const second = SECOND[command];
  if (second && rest.second === undefined) throw new UsageError(`${command} needs ${second}`);
}

export function parseInvocation(argv: string[]): Invocation {
  const { v, before, after } = split(argv);
  const [cmd, target, ...more] = before;
  const known = (c: string | undefined): c is Command => c !== undefined && (COMMANDS as readonly string[]).includes(c);
  // `kubectl sandbox exec --help` and `kubectl sandbox help exec`: that command's page
  if (cmd === 'help') return { ...empty(), helpFor: known(target) ? target : undefined };
  if (v.help || cmd === undefined) return { ...empty(), helpFor: known(cmd) ? cmd : undefined };
  if (!known(cmd)) throw new UsageError(`unknown command "${cmd}"; one of ${COMMANDS.join(', ')}`);
  const command = cmd;
  const needs = NEEDS_TARGET[command];
  if (needs && !target) throw new UsageError(`${command} needs ${needs}`);
  const [second, ...extra] = SECOND[command] ? more : [undefined, ...more];
  if (extra.length > 0 || (!needs && target)) throw new UsageError(`unexpected argument "${extra[0] ?? target}"`);
  const output = outputOf(command, v);
  if (command === 'completion' && !(SHELLS as readonly string[]).includes(target ?? ''))
    throw new UsageError(`completion takes ${SHELLS.join(' or ')}, got "${target ?? ''}"`);
  if (v['all-namespaces'] && command !== 'list') throw new UsageError('-A applies to list only');
  if (v.selector !== undefined && command !== 'list') throw new UsageError('-l applies to list only');
  if (v.selector !== undefined) selectorOf(v.selector);
  if (v['all-namespaces'] && v.namespace) throw new UsageError('-A and -n exclude each other');
  const timeoutMs = duration('request-timeout', v['request-timeout']);
  checkCommand(command, v, { second, after });
  return {
    command,
    helpFor: undefined,
    target: target ?? '',
    namespace: v.namespace,
    allNamespaces: v['all-namespaces'] ?? false,
    output,
    noHeaders: v['no-headers'] ?? false,
    labelSelector: v.selector,
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
    keySeconds: keySecondsOf(v.duration),
    e2bUrl: v.url,
  };
}

/** A token's lifetime as TokenRequest takes it: whole seconds, at least its minimum of ten minutes. */
function keySecondsOf(text: string | undefined): number | undefined {
  const ms = duration('duration', text);
  if (ms === undefined) return undefined;
  if (ms < 600_000) throw new UsageError(`--duration must be at least 10m, got "${text ?? ''}"`);
  return Math.floor(ms / 1000);
}

function empty(): Invocation {
  return {
    command: 'help',
    helpFor: undefined,
    target: '',
    namespace: undefined,
    allNamespaces: false,
    output: undefined,
    noHeaders: false,
    labelSelector: undefined,
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
    keySeconds: undefined,
    e2bUrl: undefined,
  };
}

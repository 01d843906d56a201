import { z } from 'zod';
import { SandboxScaleError, findInCauseChain } from '@sandbox-scale/scale-core';

/**
 * Flags in the kube component style (`--kebab-case value` or `--kebab-case=value`), each with
 * an env fallback `SANDBOX_SCALE_<FLAG_NAME>`, validated by a zod object whose keys are the
 * camelCase flag names. Errors name the flag, never a schema path.
 */
export class ConfigError extends SandboxScaleError {
  constructor(
    message: string,
    readonly flag?: string,
  ) {
    super(message);
  }
}

export function isConfigError(err: unknown): err is ConfigError {
  return findInCauseChain(err, 'ConfigError') !== undefined;
}

export interface FlagDoc {
  /** camelCase key in the schema. */
  key: string;
  description: string;
}

export interface ParseFlagsOptions {
  program: string;
  summary: string;
  argv?: readonly string[];
  env?: Record<string, string | undefined>;
}

export type HelpRequested = { help: string };

export function flagName(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

export function envName(key: string): string {
  return `SANDBOX_SCALE_${flagName(key).replace(/-/g, '_').toUpperCase()}`;
}

function keyOf(flag: string): string {
  return flag.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

type Shape = Record<string, z.ZodType>;

function isBooleanFlag(schema: z.ZodType): boolean {
  type Def = { type: string; innerType?: z.ZodType; in?: z.ZodType; options?: z.ZodType[] };
  const def = (schema as unknown as { def: Def }).def;
  if (def.type === 'boolean') return true;
  if (def.innerType) return isBooleanFlag(def.innerType);
  if (def.in) return isBooleanFlag(def.in);
  if (def.options) return def.options.some(isBooleanFlag);
  return false;
}

function describe(schema: z.ZodType): string {
  return schema.description ?? '';
}

function defaultOf(schema: z.ZodType): unknown {
  const def = (schema as unknown as { def: { type: string; defaultValue?: unknown } }).def;
  // prefault = a default given as flag text (`15s`), shown as typed rather than as parsed.
  if (def.type === 'default' || def.type === 'prefault') {
    const v = def.defaultValue;
    return typeof v === 'function' ? (v as () => unknown)() : v;
  }
  return undefined;
}

/** Renders `--help` from the schema: every flag, its env name, default and description. */
export function renderHelp<S extends Shape>(schema: z.ZodObject<S>, opts: ParseFlagsOptions): string {
  const lines = [`Usage: ${opts.program} [flags]`, '', opts.summary, '', 'Flags:'];
  for (const [key, s] of Object.entries(schema.shape)) {
    const d = defaultOf(s as z.ZodType);
    const dflt = d === undefined ? '' : ` (default ${JSON.stringify(d)})`;
    lines.push(`  --${flagName(key)}${isBooleanFlag(s as z.ZodType) ? '' : ' <value>'}`);
    lines.push(`      ${describe(s as z.ZodType)}${dflt} [env ${envName(key)}]`);
  }
  lines.push('  --help', '      Print this help and exit');
  return lines.join('\n');
}

/** The flags given on the command line, and every argument that is not one (unknown, or missing its value). */
function readArgv<S extends Shape>(
  schema: z.ZodObject<S>,
  argv: readonly string[],
): { raw: Record<string, unknown>; problems: FlagProblem[] } {
  const raw: Record<string, unknown> = {};
  const problems: FlagProblem[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (!arg.startsWith('--')) {
      problems.push({ message: `unexpected argument "${arg}": flags look like --name=value` });
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    const key = keyOf(name);
    const s = schema.shape[key] as z.ZodType | undefined;
    if (!s) {
      problems.push({ message: `unknown flag --${name} (see --help)`, flag: `--${name}` });
      // `--unknown value`: the value is part of the unknown flag, not an argument of its own
      if (eq === -1 && argv[i + 1] !== undefined && !(argv[i + 1] as string).startsWith('--')) i++;
    } else if (eq !== -1) raw[key] = arg.slice(eq + 1);
    else if (isBooleanFlag(s)) raw[key] = 'true';
    else {
      const next = argv[i + 1];
      if (next === undefined) problems.push({ message: `flag --${name} needs a value`, flag: `--${name}` });
      else raw[key] = next;
      i++;
    }
  }
  return { raw, problems };
}

interface FlagProblem {
  message: string;
  flag?: string;
}

/**
 * Parses flags then env into the schema. Values arrive as strings: use z.coerce for numbers,
 * and `booleanFlag()` for booleans. Returns `{help}` when --help was given. Every problem is
 * reported at once, in one ConfigError naming the first bad flag: the unknown arguments, then
 * the invalid values of the known flags.
 */
export function parseFlags<S extends Shape>(schema: z.ZodObject<S>, opts: ParseFlagsOptions): z.infer<z.ZodObject<S>> | HelpRequested {
  const argv = opts.argv ?? process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) return { help: renderHelp(schema, opts) };
  const env = opts.env ?? process.env;
  const { raw: fromArgv, problems } = readArgv(schema, argv);
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(schema.shape)) {
    const v = fromArgv[key] ?? env[envName(key)];
    if (v !== undefined) raw[key] = v;
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const msgs = parsed.error.issues.map((iss) => `--${flagName(String(iss.path[0] ?? ''))}: ${iss.message}`);
    const first = parsed.error.issues[0];
    problems.push({
      message: `invalid configuration: ${msgs.join('; ')}`,
      flag: first ? `--${flagName(String(first.path[0] ?? ''))}` : undefined,
    });
  }
  const [first] = problems;
  if (first || !parsed.success) throw new ConfigError(problems.map((p) => p.message).join('; '), first?.flag);
  return parsed.data;
}

export function isHelp(v: unknown): v is HelpRequested {
  return typeof v === 'object' && v !== null && 'help' in v && typeof (v as HelpRequested).help === 'string';
}

/** A flag holding JSON, validated by `schema`; empty is unset; a parse error names the flag. */
export function jsonFlag<T extends z.ZodType>(schema: T) {
  return z
    .string()
    .transform((s, ctx): unknown => {
      if (s === '') return undefined;
      try {
        return JSON.parse(s) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'not valid JSON' });
        return z.NEVER;
      }
    })
    .pipe(schema.optional());
}

/** A boolean flag: `--x`, `--x=true|false`, env `true|false|1|0`. */
export function booleanFlag(defaultValue: boolean) {
  return z
    .union([z.boolean(), z.enum(['true', 'false', '1', '0'])])
    .transform((v) => v === true || v === 'true' || v === '1')
    .default(defaultValue);
}

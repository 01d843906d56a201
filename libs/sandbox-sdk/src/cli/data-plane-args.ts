import { UsageError } from './usage-error';

/** One side of `cp`: a path on this machine, or `[NAMESPACE/]NAME:PATH` in a sandbox. */
export type CopySpec = { kind: 'local'; path: string } | { kind: 'remote'; namespace: string | undefined; name: string; path: string };

export interface PortSpec {
  /** 0: a free port the system chooses. */
  localPort: number;
  remotePort: number;
}

// a sandbox name is a DNS subdomain, and a namespace a DNS label
const REMOTE_SPEC = /^(?:([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\/)?([a-z0-9](?:[-a-z0-9.]*[a-z0-9])?):(.*)$/s;

/**
 * `NAME:PATH` (or `NAMESPACE/NAME:PATH`) is a sandbox's path, as kubectl cp reads `pod:path`;
 * anything else is local. A local path with a colon is written `./a:b`.
 */
export function parseCopySpec(arg: string): CopySpec {
  if (arg.startsWith('/') || arg.startsWith('./') || arg.startsWith('../')) return { kind: 'local', path: arg };
  const m = REMOTE_SPEC.exec(arg);
  if (!m) return { kind: 'local', path: arg };
  const [, namespace, name = '', path = ''] = m;
  if (path === '') throw new UsageError(`"${arg}": a sandbox path is NAME:PATH, with a PATH`);
  return { kind: 'remote', namespace, name, path };
}

function port(what: string, text: string, min: number): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) < min || Number(text) > 65535)
    throw new UsageError(`${what} must be a port number in ${min}-65535, got "${text}"`);
  return Number(text);
}

/** `REMOTE` (the same port here), `:REMOTE` (a free port here) or `LOCAL:REMOTE`, as kubectl port-forward reads them. */
export function parsePortSpec(arg: string): PortSpec {
  const colon = arg.indexOf(':');
  if (colon === -1) {
    const p = port('the port', arg, 1);
    return { localPort: p, remotePort: p };
  }
  const local = arg.slice(0, colon);
  return { localPort: local === '' ? 0 : port('the local port', local, 1), remotePort: port('the remote port', arg.slice(colon + 1), 1) };
}

export function parseEnv(pairs: string[] | undefined): Record<string, string> | undefined {
  if (pairs === undefined) return undefined;
  // no prototype: a key such as __proto__ is an ordinary variable name here, as it is to a shell
  const env = Object.create(null) as Record<string, string>;
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`--env takes KEY=VALUE, got "${pair}"`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return env;
}

export function parseCopy(src: string, dst: string): { from: CopySpec; to: CopySpec } {
  const from = parseCopySpec(src);
  const to = parseCopySpec(dst);
  if (from.kind === to.kind)
    throw new UsageError(
      from.kind === 'local'
        ? 'cp copies to or from a sandbox: one side is NAME:PATH'
        : 'cp copies between this machine and a sandbox: one side is a local path',
    );
  return { from, to };
}

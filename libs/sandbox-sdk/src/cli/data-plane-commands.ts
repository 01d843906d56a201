import type { SandboxClient } from '../client';
import type { CallOptions } from '../deadline';
import type { Invocation } from './args';
import { copyIn, copyOut } from './copy';

/** Where a data-plane command writes: stdout and stderr, and the signal that stops a command that runs until interrupted. */
export interface DataPlaneIo {
  out: (text: string) => void;
  err: (text: string) => void;
  /** Aborted by Ctrl-C (SIGINT) or SIGTERM. */
  interrupted?: AbortSignal;
}

export const DATA_PLANE_COMMANDS = ['exec', 'cp', 'port-forward'] as const;
export type DataPlaneCommand = (typeof DATA_PLANE_COMMANDS)[number];
export const isDataPlaneCommand = (c: string): c is DataPlaneCommand => (DATA_PLANE_COMMANDS as readonly string[]).includes(c);

/** A shell's exit status is 0-255; a command the node killed (or whose code it did not learn) is a failure. */
export function exitStatusOf(exitCode: number): number {
  return Number.isInteger(exitCode) && exitCode >= 0 && exitCode <= 255 ? exitCode : 1;
}

const callOf = (inv: Invocation): CallOptions => (inv.timeoutMs !== undefined ? { timeoutMs: inv.timeoutMs } : {});

/** The signal an exec is cancelled by: an interrupt, and --request-timeout (the whole call, as for every command). */
function execSignal(inv: Invocation, io: DataPlaneIo): AbortSignal | undefined {
  const signals = [io.interrupted, inv.timeoutMs !== undefined ? AbortSignal.timeout(inv.timeoutMs) : undefined];
  const given = signals.filter((s): s is AbortSignal => s !== undefined);
  return given.length === 0 ? undefined : AbortSignal.any(given);
}

async function exec(c: SandboxClient, inv: Invocation, io: DataPlaneIo): Promise<number> {
  const sb = c.sandbox(inv.target, inv.namespace ?? c.namespace);
  const signal = execSignal(inv, io);
  const r = await sb.exec(inv.argv, {
    ...(inv.cwd !== undefined ? { cwd: inv.cwd } : {}),
    ...(inv.env !== undefined ? { env: inv.env } : {}),
    ...(inv.execTimeoutMs !== undefined ? { timeoutMs: inv.execTimeoutMs } : {}),
    ...(signal ? { signal } : {}),
  });
  if (r.stdout) io.out(r.stdout);
  if (r.stderr) io.err(r.stderr);
  return exitStatusOf(r.exitCode);
}

async function copy(c: SandboxClient, inv: Invocation, io: DataPlaneIo): Promise<number> {
  const spec = inv.copy;
  if (!spec) return 1;
  const onSkip = (path: string, why: string): void => io.err(`warning: skipped ${path}: ${why}\n`);
  const o = { ...callOf(inv), onSkip };
  if (spec.from.kind === 'local' && spec.to.kind === 'remote') {
    const sb = c.sandbox(spec.to.name, spec.to.namespace ?? inv.namespace ?? c.namespace);
    await copyIn(sb, spec.from.path, spec.to.path, o);
  } else if (spec.from.kind === 'remote' && spec.to.kind === 'local') {
    const sb = c.sandbox(spec.from.name, spec.from.namespace ?? inv.namespace ?? c.namespace);
    await copyOut(sb, spec.from.path, spec.to.path, o);
  }
  return 0;
}

/** Listens until interrupted: prints where, reports connections that could not be relayed, and ends with 0 on Ctrl-C. */
async function portForward(c: SandboxClient, inv: Invocation, io: DataPlaneIo): Promise<number> {
  const ports = inv.ports;
  if (!ports) return 1;
  const sb = c.sandbox(inv.target, inv.namespace ?? c.namespace);
  const pf = await sb.forward(ports.remotePort, {
    localPort: ports.localPort,
    ...callOf(inv),
    ...(io.interrupted ? { signal: io.interrupted } : {}),
    onConnectionError: (err) => io.err(`error: connection to port ${ports.remotePort}: ${(err as Error).message}\n`),
  });
  io.out(`Forwarding from ${pf.address} -> ${ports.remotePort}\n`);
  // the interrupt closes the listener (and every relay) through the signal given to forward
  await pf.closed;
  return 0;
}

export function runDataPlane(c: SandboxClient, inv: Invocation & { command: DataPlaneCommand }, io: DataPlaneIo): Promise<number> {
  switch (inv.command) {
    case 'exec':
      return exec(c, inv, io);
    case 'cp':
      return copy(c, inv, io);
    case 'port-forward':
      return portForward(c, inv, io);
  }
}

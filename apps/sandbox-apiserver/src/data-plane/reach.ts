import type { Socket } from 'node:net';
import type { AgentConnection, ExecRequest, ExecResult, CallOptions, ExecCallOptions } from '@sandbox-scale/sandboxd-client';
import { dataPlaneStatusError, isGoneFromNode, type DataPlaneCall } from './data-plane-errors';

/** The calls of one agent connection the data plane makes. */
export type AgentSession = Pick<AgentConnection, 'readFile' | 'writeFile' | 'list' | 'stat' | 'mkdir' | 'remove' | 'close'>;

/** The sandbox-scoped calls of a node's client the data plane makes (SandboxdClient has them). */
export interface DataPlaneClient {
  exec(id: string, token: string, req: ExecRequest, opts?: ExecCallOptions): Promise<ExecResult>;
  openAgent(id: string, token: string, opts?: CallOptions): Promise<AgentSession>;
  openPort(id: string, token: string, port: number, opts?: CallOptions): Promise<Socket>;
}

export interface ReachedSandbox {
  readonly client: DataPlaneClient;
  readonly id: string;
  readonly token: string;
  readonly node: string;
}

/** Where a served sandbox's data plane is (SandboxAccess). */
export interface SandboxResolver {
  resolve(namespace: string, name: string, signal?: AbortSignal): Promise<ReachedSandbox>;
  forget(node: string, id: string): void;
}

/**
 * Runs `fn` against the sandbox's node. A 404 from the node drops the token held and tries once
 * more with a fresh one (the node may have restarted the sandbox's record, or the token aged
 * out); a second 404 means the sandbox is gone. Every failure becomes the Status naming the
 * sandbox and the cause. `where` learns the node as soon as it is known (for the audit line).
 */
export async function reach<T>(
  resolver: SandboxResolver,
  call: DataPlaneCall,
  fn: (s: ReachedSandbox) => Promise<T>,
  opts: { signal?: AbortSignal; where?: (s: ReachedSandbox) => void } = {},
): Promise<T> {
  let node: string | undefined;
  try {
    for (let attempt = 0; ; attempt++) {
      const s = await resolver.resolve(call.namespace, call.name, opts.signal);
      node = s.node;
      opts.where?.(s);
      try {
        return await fn(s);
      } catch (err) {
        if (!isGoneFromNode(err)) throw err;
        resolver.forget(s.node, s.id);
        if (attempt > 0) throw err;
      }
    }
  } catch (err) {
    throw dataPlaneStatusError(err, node === undefined ? call : { ...call, node });
  }
}

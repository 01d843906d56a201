import { request } from 'undici';
import { SandboxdClientSet, type SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { startSim, type Sim, type StartSimOptions } from '../src';

export const ROOT = 'root-token';
export const ACME = { name: 'acme', token: 'acme-token', maxClaims: 0 };
export const GLOBEX = { name: 'globex', token: 'globex-token', maxClaims: 0 };

export interface TestSim {
  sim: Sim;
  clients: SandboxdClientSet;
  /** Client of node i with the root token. */
  root: (i?: number) => SandboxdClient;
  url: (i?: number) => string;
  close: () => Promise<void>;
}

/** An in-process fleet on port 0, instant by default, with a root token and two tenants. */
export async function startTestSim(opts: StartSimOptions = {}): Promise<TestSim> {
  const sim = await startSim({ speed: 0, token: ROOT, tenants: [ACME, GLOBEX], ...opts });
  const clients = new SandboxdClientSet({ token: opts.token ?? ROOT });
  const url = (i = 0): string => {
    const n = sim.nodes[i];
    if (n === undefined) throw new Error(`no node ${i}`);
    return n.url;
  };
  return {
    sim,
    clients,
    root: (i = 0) => clients.forNode(url(i)),
    url,
    close: async () => {
      await clients.close();
      await sim.stop();
    },
  };
}

export async function caught(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

/** Polls until check passes (no fixed sleeps in tests). */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

export interface RawReply {
  status: number;
  text: string;
  json: unknown;
  headers: Record<string, string | string[] | undefined>;
}

/** A request exactly as written (no client library), for status and body assertions. */
export async function raw(
  base: string,
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'HEAD',
  path: string,
  opts: { token?: string; body?: string } = {},
): Promise<RawReply> {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await request(`${base}${path}`, { method, headers, body: opts.body ?? null });
  const text = await res.body.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, text, json, headers: res.headers };
}

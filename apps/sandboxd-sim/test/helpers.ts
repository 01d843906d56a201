import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { LineReader, SandboxdClientSet, type SandboxdClient } from '@sandbox-scale/sandboxd-client';
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

export interface DataSim extends TestSim {
  /** The data directory (node i's sandbox roots are under `<dataDir>/node-<i>/sandboxes`). */
  dataDir: string;
  /** Host path of a sandbox's root on node 0. */
  rootOf: (id: string) => string;
  /** A claim on node 0 (root token), with its own token. */
  claim: () => Promise<{ id: string; token: string }>;
}

/** A sim with the data plane on, its data directory a fresh temp dir removed on close. */
export async function startDataSim(opts: StartSimOptions = {}): Promise<DataSim> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sim-data-test-'));
  const t = await startTestSim({ dataPlane: true, dataDir, pools: [{ template: 'base:24.04', warm: 2 }], ...opts });
  return {
    ...t,
    dataDir,
    rootOf: (id) => join(dataDir, 'node-0', 'sandboxes', id),
    claim: async () => {
      const c = await t.root().claim({ template: 'base:24.04' });
      return { id: c.id, token: c.token };
    },
    close: async () => {
      await t.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Whether a process has ended: gone from /proc, or a zombie nobody reaped yet (it runs no more). */
export function hasEnded(pid: number): boolean {
  const state = procState(pid);
  return state === undefined || state === 'Z' || state === 'X';
}

/** The state letter of /proc/<pid>/stat (R, S, T for stopped, Z, …), or undefined when the process is gone. */
export function procState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

/** A raw agent connection (no client library): frames written and read as the wire carries them. */
export interface RawAgent {
  send: (frame: unknown) => void;
  sendText: (text: string) => void;
  /** The next frame as parsed JSON, or undefined once the node closed the connection. */
  next: () => Promise<Record<string, unknown> | undefined>;
  close: () => void;
}

export async function rawAgent(base: string, id: string, token: string): Promise<RawAgent> {
  const socket = await new Promise<Socket>((resolve, reject) => {
    const req = httpRequest(`${base}/v1/sandboxes/${id}/agent`, {
      headers: { connection: 'Upgrade', upgrade: 'silkd', authorization: `Bearer ${token}` },
    });
    req.on('upgrade', (_res, s: Socket) => resolve(s));
    req.on('response', (res) => reject(new Error(`status ${res.statusCode}`)));
    req.on('error', reject);
    req.end();
  });
  const reader = new LineReader(socket);
  return {
    send: (frame) => socket.write(`${JSON.stringify(frame)}\n`),
    sendText: (text) => socket.write(text),
    next: async () => {
      const line = await reader.next().catch(() => undefined);
      return line === undefined ? undefined : (JSON.parse(line.toString('utf8')) as Record<string, unknown>);
    },
    close: () => socket.destroy(),
  };
}

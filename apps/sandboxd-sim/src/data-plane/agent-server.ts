import type { Socket } from 'node:net';
import { isPrototypeKeyError, parseUntrustedJson } from '@sandbox-scale/scale-core';
import { AGENT_VERBS, AgentRequestSchema, LineReader, writeFrame, type AgentRequest } from '@sandbox-scale/sandboxd-client';
import type { SandboxAccess } from './access';
import { agentExec } from './agent-exec';
import { isAgentFail, type AgentIo } from './agent-io';
import { fsList, fsMkdir, fsRead, fsRename, fsRm, fsStat, fsWrite } from './agent-fs';

/** A frame as the agent reads it: a request, or why it is not one. */
type Parsed = { ok: true; req: AgentRequest } | { ok: false; message: string };

export function parseRequest(line: Buffer): Parsed {
  let value: unknown;
  try {
    value = parseUntrustedJson(line.toString('utf8'), 'the frame');
  } catch (err) {
    return {
      ok: false,
      message: isPrototypeKeyError(err) ? `frame key ${JSON.stringify(err.field)} names a prototype` : 'frame is not JSON',
    };
  }
  const op = typeof value === 'object' && value !== null && 'op' in value ? value.op : undefined;
  if (typeof op !== 'string') return { ok: false, message: 'frame has no op' };
  if (!(AGENT_VERBS as readonly string[]).includes(op)) return { ok: false, message: `unknown op ${JSON.stringify(op)}` };
  const parsed = AgentRequestSchema.safeParse(value);
  if (!parsed.success)
    return { ok: false, message: `invalid ${op} frame: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` };
  return { ok: true, req: parsed.data };
}

/**
 * Serves the guest agent's protocol on an upgraded connection: newline-delimited JSON RPCs,
 * one after another, until the caller ends the stream. A refused frame gets an `error` frame and
 * the connection goes on; a frame past the cap ends the connection (the stream cannot be resynced).
 */
export function serveAgent(access: SandboxAccess, socket: Socket): void {
  const reader = new LineReader(socket, { destroyOnFail: false });
  const io: AgentIo = { access, socket, reader, send: (frame) => writeFrame(socket, frame) };
  serve(io).then(
    () => socket.end(),
    (err: unknown) => {
      access.dp.logger.debug({ err, sandboxId: access.sb.id }, 'agent connection ended');
      // what was written (a last error frame) goes out before the connection ends
      socket.end(() => socket.destroy());
    },
  );
}

async function serve(io: AgentIo): Promise<void> {
  for (let line = await next(io); line !== undefined; line = await next(io)) {
    const parsed = parseRequest(line);
    if (!parsed.ok) {
      await io.send({ type: 'error', kind: 'bad_request', message: parsed.message });
      continue;
    }
    io.access.touch();
    await answer(io, parsed.req);
  }
}

/** The next frame; one past the cap is answered with a last error frame before the connection ends. */
async function next(io: AgentIo): Promise<Buffer | undefined> {
  try {
    return await io.reader.next();
  } catch (err) {
    if (!io.socket.destroyed) await io.send({ type: 'error', kind: 'bad_request', message: (err as Error).message }).catch(() => undefined);
    throw err;
  }
}

async function answer(io: AgentIo, req: AgentRequest): Promise<void> {
  try {
    await dispatch(io, req);
  } catch (err) {
    if (io.socket.destroyed) throw err;
    if (!isAgentFail(err)) io.access.dp.logger.error({ err, sandboxId: io.access.sb.id, op: req.op }, 'agent request failed unexpectedly');
    const fail = isAgentFail(err) ? err : { kind: 'internal' as const, message: `${req.op} failed` };
    await io.send({ type: 'error', kind: fail.kind, message: fail.message });
  }
}

function dispatch(io: AgentIo, req: AgentRequest): Promise<void> {
  switch (req.op) {
    case 'exec':
      return agentExec(io, req);
    case 'fs_write':
      return fsWrite(io, req);
    case 'fs_read':
      return fsRead(io, req);
    case 'fs_list':
      return fsList(io, req);
    case 'fs_stat':
      return fsStat(io, req);
    case 'fs_mkdir':
      return fsMkdir(io, req);
    case 'fs_rm':
      return fsRm(io, req);
    case 'fs_rename':
      return fsRename(io, req);
  }
}

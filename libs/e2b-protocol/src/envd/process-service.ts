import type { MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import {
  Signal,
  type Process,
  type ProcessEventSchema,
  type ProcessSelector,
  type StartRequest,
  type StreamInputRequest,
} from '../gen/process/process_pb';
import { guarded } from './errors';
import { endOf, MAX_PROCESSES, type EnvdProcess, type OutputReader } from './envd-state';
import type { EnvdGuest } from './guest';

type EventInit = MessageInitShape<typeof ProcessEventSchema>;

/** A stream's keepalive period: the SDKs send `Keepalive-Ping-Interval` in seconds (50). */
function keepaliveMs(ctx: HandlerContext): number | undefined {
  const s = Number(ctx.requestHeader.get('keepalive-ping-interval'));
  return Number.isFinite(s) && s > 0 ? Math.max(1, s) * 1000 : undefined;
}

/** The caller's deadline passed (Connect-Timeout-Ms), as against the caller hanging up. */
const timedOut = (ctx: HandlerContext): boolean => ConnectError.from(ctx.signal.reason).code === Code.DeadlineExceeded;

function selected(guest: EnvdGuest, sel: ProcessSelector | undefined): EnvdProcess {
  const s = sel?.selector;
  const p = s?.case === 'pid' ? guest.state.find({ pid: s.value }) : s?.case === 'tag' ? guest.state.find({ tag: s.value }) : undefined;
  if (p === undefined)
    throw new ConnectError(
      `process ${s?.case === 'tag' ? `tagged ${JSON.stringify(s.value)}` : String(s?.value ?? '')} not found`,
      Code.NotFound,
    );
  return p;
}

/** A reader's events to the stream: output as it comes, keepalives while idle, the end event last. */
async function* events(reader: OutputReader, ctx: HandlerContext): AsyncGenerator<{ event: EventInit }> {
  const idle = keepaliveMs(ctx);
  for (;;) {
    const o = await reader.next(idle, ctx.signal);
    if (o === undefined) return;
    if (o === 'idle') yield { event: { event: { case: 'keepalive', value: {} } } };
    else if (o.kind === 'end')
      yield { event: { event: { case: 'end', value: { exitCode: o.exitCode, exited: o.exited, status: o.status } } } };
    else yield { event: { event: { case: 'data', value: { output: { case: o.kind, value: new Uint8Array(o.data) } } } } };
  }
}

function configOf(req: StartRequest): { cmd: string; args: string[]; envs: Record<string, string>; cwd: string | undefined } {
  const p = req.process;
  if (p === undefined || p.cmd === '') throw new ConnectError('process.cmd is required', Code.InvalidArgument);
  // a map decoded from JSON is a plain object: copy it onto one without a prototype
  const envs = Object.assign(Object.create(null) as Record<string, string>, p.envs);
  return { cmd: p.cmd, args: [...p.args], envs, cwd: p.cwd };
}

/** envd's `process.Process`, over the guest that `guestOf` finds for the call. */
export function processService(guestOf: (ctx: HandlerContext) => EnvdGuest): ServiceImpl<typeof Process> {
  return {
    async *start(req, ctx) {
      const guest = guestOf(ctx);
      if (req.pty !== undefined) throw new ConnectError('a PTY is not available in this sandbox', Code.Unimplemented);
      if (guest.state.processes.size >= MAX_PROCESSES)
        throw new ConnectError(`${MAX_PROCESSES} processes run in this sandbox already`, Code.ResourceExhausted);
      const config = configOf(req);
      const child = await guarded(() => guest.start({ ...config, stdin: req.stdin === true }));
      const proc = guest.state.add(child, { ...config, stdin: req.stdin === true }, req.tag);
      const reader = proc.read();
      // the deadline the caller set is the command's: past it the command is killed
      const onAbort = (): void => {
        if (timedOut(ctx)) child.kill('SIGKILL');
      };
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      try {
        // the SDKs wait for this before anything else
        yield { event: { event: { case: 'start', value: { pid: child.pid } } } };
        if (reader !== undefined) yield* events(reader, ctx);
        else yield* ended(proc);
      } finally {
        ctx.signal.removeEventListener('abort', onAbort);
        if (reader !== undefined) proc.unread(reader);
      }
    },

    async *connect(req, ctx) {
      const proc = selected(guestOf(ctx), req.process);
      const reader = proc.read();
      if (reader === undefined) throw new ConnectError(`process ${proc.pid} not found`, Code.NotFound);
      try {
        yield { event: { event: { case: 'start', value: { pid: proc.pid } } } };
        yield* events(reader, ctx);
      } finally {
        proc.unread(reader);
      }
    },

    list(_req, ctx) {
      const guest = guestOf(ctx);
      return {
        processes: [...guest.state.processes.values()].map((p) => ({
          pid: p.pid,
          config: {
            cmd: p.spec.cmd,
            args: [...p.spec.args],
            envs: { ...p.spec.envs },
            ...(p.spec.cwd !== undefined ? { cwd: p.spec.cwd } : {}),
          },
          ...(p.tag !== undefined ? { tag: p.tag } : {}),
        })),
      };
    },

    sendSignal(req, ctx) {
      const proc = selected(guestOf(ctx), req.process);
      if (req.signal !== Signal.SIGKILL && req.signal !== Signal.SIGTERM)
        throw new ConnectError('signal must be SIGNAL_SIGKILL or SIGNAL_SIGTERM', Code.InvalidArgument);
      proc.child.kill(req.signal === Signal.SIGKILL ? 'SIGKILL' : 'SIGTERM');
      return {};
    },

    async sendInput(req, ctx) {
      const proc = selected(guestOf(ctx), req.process);
      const input = req.input?.input;
      if (input?.value === undefined) throw new ConnectError('input is required', Code.InvalidArgument);
      await writeStdin(proc, input.value);
      return {};
    },

    async streamInput(reqs: AsyncIterable<StreamInputRequest>, ctx) {
      const guest = guestOf(ctx);
      let proc: EnvdProcess | undefined;
      for await (const r of reqs) {
        if (r.event.case === 'start') proc = selected(guest, r.event.value.process);
        else if (r.event.case === 'data') {
          if (proc === undefined) throw new ConnectError('the stream must start with a start event', Code.InvalidArgument);
          const input = r.event.value.input?.input;
          if (input?.value !== undefined) await writeStdin(proc, input.value);
        }
      }
      return {};
    },

    closeStdin(req, ctx) {
      const proc = selected(guestOf(ctx), req.process);
      if (proc.child.stdin === undefined) throw new ConnectError(`process ${proc.pid} was started without stdin`, Code.FailedPrecondition);
      proc.child.stdin.end();
      return {};
    },

    update() {
      throw new ConnectError('a PTY is not available in this sandbox', Code.Unimplemented);
    },
  };
}

/** A process that ended between its start and its first read: only its end is left to say. */
async function* ended(proc: EnvdProcess): AsyncGenerator<{ event: EventInit }> {
  const { code, signal } = await proc.child.exited;
  const { exitCode, exited, status } = endOf(code, signal);
  yield { event: { event: { case: 'end', value: { exitCode, exited, status } } } };
}

function writeStdin(proc: EnvdProcess, data: Uint8Array): Promise<void> {
  const stdin = proc.child.stdin;
  if (stdin === undefined || stdin.writableEnded) throw new ConnectError(`process ${proc.pid} has no open stdin`, Code.FailedPrecondition);
  return new Promise<void>((resolve, reject) =>
    stdin.write(data, (err) =>
      err ? reject(new ConnectError(`stdin of process ${proc.pid}: ${err.message}`, Code.FailedPrecondition)) : resolve(),
    ),
  );
}

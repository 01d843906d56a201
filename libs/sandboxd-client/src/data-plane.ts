import { z } from 'zod';

/**
 * The data plane of a claimed sandbox on the wire: the buffered exec's body and reply, and the
 * agent's newline-delimited JSON frames. Shared by the client (what it encodes and reads) and the
 * simulator (what it decodes and writes), so both sides agree by construction.
 */

/** The exec body is capped at 1 MiB, as every request body of the node. */
export const EXEC_BODY_LIMIT_BYTES = 1 << 20;
/** stdout + stderr of one buffered exec; past it the node kills the command and answers 413. */
export const EXEC_OUTPUT_LIMIT_BYTES = 8 << 20;
/**
 * The client's read cap of an exec reply. JSON writes a control byte as a six-byte `\u00XX`
 * escape, so 8 MiB of output can take 48 MiB on the wire; the cap leaves room for that.
 */
export const EXEC_REPLY_LIMIT_BYTES = 6 * EXEC_OUTPUT_LIMIT_BYTES + (1 << 20);
/** One agent frame (one line), in both directions. */
export const AGENT_FRAME_LIMIT_BYTES = 8 << 20;
/** File data travels in chunks of this size (base64 in one frame each). */
export const AGENT_CHUNK_BYTES = 256 << 10;
/** fs_list answers in `entries` frames of at most this many entries. */
export const AGENT_LIST_BATCH = 4096;
/** The `Upgrade` protocol names of the two relays. */
export const PORT_UPGRADE_PROTOCOL = 'tcp';
export const AGENT_UPGRADE_PROTOCOL = 'silkd';

const stringMap = z.record(z.string(), z.string());

/** `POST /v1/sandboxes/{id}/exec`; strict, since the node answers an unknown field with 400. */
export const ExecBodySchema = z.strictObject({
  argv: z.array(z.string()).min(1),
  cwd: z.string().nullish(),
  env: stringMap.nullish(),
  timeout_seconds: z.number().int().min(0).nullish(),
});
export type ExecBody = z.input<typeof ExecBodySchema>;

export const ExecReplySchema = z
  .object({ exit_code: z.number().int(), stdout: z.string(), stderr: z.string() })
  .transform((r) => ({ exitCode: r.exit_code, stdout: r.stdout, stderr: r.stderr }));
export type WireExecReply = z.input<typeof ExecReplySchema>;

export interface ExecRequest {
  argv: string[];
  /** A guest path (`/work`); absent = the sandbox's root. */
  cwd?: string;
  env?: Record<string, string>;
  /** 0 or absent = no limit beyond the call itself; past it the node kills the command (504). */
  timeoutSeconds?: number;
}

export type ExecResult = z.output<typeof ExecReplySchema>;

export function encodeExec(req: ExecRequest): ExecBody {
  return {
    argv: req.argv,
    ...(req.cwd !== undefined ? { cwd: req.cwd } : {}),
    ...(req.env !== undefined ? { env: req.env } : {}),
    ...(req.timeoutSeconds ? { timeout_seconds: req.timeoutSeconds } : {}),
  };
}

// --- agent frames: requests (client → guest) ---------------------------------------------------

const base64 = z.string();
const frame = <O extends string, T extends z.ZodRawShape>(op: O, shape: T) => z.object({ op: z.literal(op), ...shape });

export const AgentExecFrameSchema = frame('exec', {
  argv: z.array(z.string()).min(1),
  cwd: z.string().nullish(),
  env: stringMap.nullish(),
  user: z.string().nullish(),
  detach: z.boolean().nullish(),
});
export const AgentFsWriteFrameSchema = frame('fs_write', { path: z.string(), mode: z.number().int().min(0).max(0o7777).nullish() });
export const AgentFsReadFrameSchema = frame('fs_read', { path: z.string() });
export const AgentFsListFrameSchema = frame('fs_list', { path: z.string() });
export const AgentFsStatFrameSchema = frame('fs_stat', { path: z.string() });
export const AgentFsMkdirFrameSchema = frame('fs_mkdir', { path: z.string(), parents: z.boolean().nullish() });
export const AgentFsRmFrameSchema = frame('fs_rm', { path: z.string(), recursive: z.boolean().nullish() });
export const AgentFsRenameFrameSchema = frame('fs_rename', { from: z.string(), to: z.string() });

/** A request frame `{"v":1,"op":…}`; unknown fields are ignored. */
export const AgentRequestSchema = z.discriminatedUnion('op', [
  AgentExecFrameSchema,
  AgentFsWriteFrameSchema,
  AgentFsReadFrameSchema,
  AgentFsListFrameSchema,
  AgentFsStatFrameSchema,
  AgentFsMkdirFrameSchema,
  AgentFsRmFrameSchema,
  AgentFsRenameFrameSchema,
]);
export type AgentRequest = z.output<typeof AgentRequestSchema>;
export type AgentRequestInput = z.input<typeof AgentRequestSchema>;
export const AGENT_VERBS = AgentRequestSchema.options.map((o) => o.shape.op.value);

/**
 * What follows an fs_write: `data` frames, then `data_end`. Written `{"type":"data",…}` like the
 * guest's own data frames; `op` in place of `type` reads the same.
 */
export const AgentUploadFrameSchema = z.union([
  z.object({ type: z.literal('data'), data: base64 }),
  z.object({ op: z.literal('data'), data: base64 }),
  z.object({ type: z.literal('data_end') }),
  z.object({ op: z.literal('data_end') }),
]);

// --- agent frames: replies (guest → client) ----------------------------------------------------

export const AGENT_ERROR_KINDS = ['bad_request', 'not_found', 'unimplemented', 'internal'] as const;
export type AgentErrorKind = (typeof AGENT_ERROR_KINDS)[number];
export const AGENT_ENTRY_KINDS = ['file', 'dir', 'symlink', 'other'] as const;
export type AgentEntryKind = (typeof AGENT_ENTRY_KINDS)[number];

const entryKind = z.enum(AGENT_ENTRY_KINDS);
export const AgentEntrySchema = z.object({ name: z.string(), kind: entryKind, size: z.number() });
export type AgentEntry = z.output<typeof AgentEntrySchema>;

export const AgentStatInfoSchema = z
  .object({ kind: entryKind, size: z.number(), mode: z.number().int(), mtime_epoch_secs: z.number() })
  .transform((s) => ({ kind: s.kind, size: s.size, mode: s.mode, mtimeEpochSecs: s.mtime_epoch_secs }));
export type AgentStat = z.output<typeof AgentStatInfoSchema>;
export type WireAgentStat = z.input<typeof AgentStatInfoSchema>;

export const AgentReplySchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('started'), pid: z.number().int() }),
  z.object({ type: z.literal('stdout'), data: base64 }),
  z.object({ type: z.literal('stderr'), data: base64 }),
  z.object({ type: z.literal('exit'), code: z.number().int() }),
  z.object({ type: z.literal('data'), data: base64 }),
  z.object({ type: z.literal('done') }),
  z.object({ type: z.literal('entries'), entries: z.array(AgentEntrySchema) }),
  z.object({ type: z.literal('stat'), info: AgentStatInfoSchema }),
  z.object({ type: z.literal('error'), kind: z.enum(AGENT_ERROR_KINDS).catch('internal'), message: z.string().catch('') }),
]);
export type AgentReply = z.output<typeof AgentReplySchema>;
export type WireAgentReply = z.input<typeof AgentReplySchema>;

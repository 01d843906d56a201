import { z } from 'zod';

/**
 * envd's `process.Process` service in proto3 JSON (lowerCamelCase names, bytes as base64, enums
 * by name, defaults omitted), as e2b's SDKs send and read it.
 */

const ProcessConfigSchema = z.object({
  cmd: z.string().min(1),
  args: z.array(z.string()).default([]),
  envs: z.record(z.string(), z.string()).default({}),
  cwd: z.string().optional(),
});
export type ProcessConfig = z.infer<typeof ProcessConfigSchema>;

const PtySchema = z.object({ size: z.object({ cols: z.number().int().min(0), rows: z.number().int().min(0) }).optional() });

/** `process.Process/Start`: `commands.run` sends `/bin/bash -l -c <cmd>`. */
export const StartRequestSchema = z.object({
  process: ProcessConfigSchema,
  pty: PtySchema.optional(),
  tag: z.string().optional(),
  stdin: z.boolean().optional(),
});
export type StartRequest = z.infer<typeof StartRequestSchema>;

/** The SDKs select a process by pid only. */
export const ProcessSelectorSchema = z.object({ pid: z.number().int().min(0) });

export const ConnectRequestSchema = z.object({ process: ProcessSelectorSchema });
export const SignalSchema = z.enum(['SIGNAL_UNSPECIFIED', 'SIGNAL_SIGTERM', 'SIGNAL_SIGKILL']);
export const SendSignalRequestSchema = z.object({ process: ProcessSelectorSchema, signal: SignalSchema.default('SIGNAL_UNSPECIFIED') });
export const SendInputRequestSchema = z.object({
  process: ProcessSelectorSchema,
  input: z.object({ stdin: z.string().optional(), pty: z.string().optional() }),
});
export const CloseStdinRequestSchema = z.object({ process: ProcessSelectorSchema });

/** One event of a Start or Connect stream, in the `{"event":{…}}` a StartResponse carries. */
export type ProcessEvent =
  | { event: { start: { pid: number } } }
  | { event: { data: { stdout: string } | { stderr: string } | { pty: string } } }
  | { event: { end: { exitCode?: number; exited?: boolean; status: string; error?: string } } }
  | { event: { keepalive: Record<string, never> } };

/** The first event of every stream: the SDKs fail anything else with "Expected start event". */
export const startEvent = (pid: number): ProcessEvent => ({ event: { start: { pid } } });

export const dataEvent = (stream: 'stdout' | 'stderr' | 'pty', bytes: Buffer): ProcessEvent =>
  ({ event: { data: { [stream]: bytes.toString('base64') } } }) as ProcessEvent;

export const keepaliveEvent = (): ProcessEvent => ({ event: { keepalive: {} } });

/**
 * The process's end. proto3 JSON omits defaults, so exit code 0 and `exited:false` are left out;
 * a non-zero code makes the SDK's `run()` throw CommandExitError with this event's output.
 */
export function endEvent(o: { exitCode: number; exited: boolean; status: string; error?: string }): ProcessEvent {
  return {
    event: {
      end: {
        ...(o.exitCode !== 0 ? { exitCode: o.exitCode } : {}),
        ...(o.exited ? { exited: true } : {}),
        status: o.status,
        ...(o.error ? { error: o.error } : {}),
      },
    },
  };
}

/** The status text of an exit, as a Go process reports it (`exit status 3`, `signal: killed`). */
export function exitStatus(exitCode: number, signal?: string): string {
  if (signal !== undefined) return `signal: ${signal}`;
  return `exit status ${exitCode}`;
}

import { execFile } from 'node:child_process';

export class CommandError extends Error {
  override readonly name = 'CommandError';
  constructor(
    message: string,
    readonly code: number,
    readonly stderr: string,
  ) {
    super(message);
  }
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion and resolves with its exit code and output, whatever the code. */
export function runProcess(bin: string, args: string[], env: Record<string, string> = {}, input?: string): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = execFile(bin, args, { env: { ...process.env, ...env }, maxBuffer: 256 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

/** Runs a command to completion; rejects with its stderr when it exits non-zero. */
export async function runCommand(bin: string, args: string[], env: Record<string, string> = {}, input?: string): Promise<string> {
  const r = await runProcess(bin, args, env, input);
  if (r.code !== 0)
    throw new CommandError(
      `${bin.split('/').pop()} ${args.slice(0, 3).join(' ')} failed: ${r.stderr.trim() || `exit code ${r.code}`}`,
      r.code,
      r.stderr,
    );
  return r.stdout;
}

import { execFile } from 'node:child_process';

export class CommandError extends Error {
  override readonly name = 'CommandError';
  constructor(message: string, readonly code: number, readonly stderr: string) {
    super(message);
  }
}

/** Runs a command to completion; rejects with its stderr when it exits non-zero. */
export function runCommand(bin: string, args: string[], env: Record<string, string> = {}, input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(bin, args, { env: { ...process.env, ...env }, maxBuffer: 256 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new CommandError(`${bin.split('/').pop()} ${args.slice(0, 3).join(' ')} failed: ${stderr.trim() || err.message}`, typeof err.code === 'number' ? err.code : 1, stderr));
      else resolve(stdout);
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

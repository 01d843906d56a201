import { isKubeConfigError } from '@sandbox-scale/kube-runtime';
import { isSdkError } from '../errors';
import { parseInvocation, USAGE, UsageError } from './args';
import { run } from './commands';

/**
 * `kubectl sandbox …`: kubectl finds this executable as `kubectl-sandbox` on PATH and passes
 * the arguments after `sandbox`; the kubeconfig and context are the user's, as for kubectl.
 * Every failure ends as one `error: …` line on stderr and exit code 1, never a stack trace.
 */
export async function main(
  argv: string[],
  io = { out: (t: string) => void process.stdout.write(t), err: (t: string) => void process.stderr.write(t) },
): Promise<number> {
  try {
    const inv = parseInvocation(argv);
    if (inv.command === 'help') {
      io.out(USAGE);
      return 0;
    }
    await run(inv, io);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`error: ${err.message}\n\n${USAGE}`);
      return 1;
    }
    const message = isSdkError(err) || isKubeConfigError(err) ? (err as Error).message : describeUnexpected(err);
    io.err(`error: ${message}\n`);
    return 1;
  }
}

/** A connection refused, a TLS failure: the message and its cause, which is where the reason is. */
function describeUnexpected(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error && cause.message !== err.message ? `${err.message}: ${cause.message}` : err.message;
}

import { isKubeConfigError } from '@sandbox-scale/kube-runtime';
import { isSdkError } from '../errors';
import { parseInvocation, USAGE, UsageError } from './args';
import { run, type Io } from './commands';

/**
 * `kubectl sandbox …`: kubectl finds this executable as `kubectl-sandbox` on PATH and passes
 * the arguments after `sandbox`; the kubeconfig and context are the user's, as for kubectl.
 * Every failure ends as one `error: …` line on stderr and exit code 1, never a stack trace.
 */
export async function main(
  argv: string[],
  io: Io = { out: (t: string) => void process.stdout.write(t), err: (t: string) => void process.stderr.write(t) },
): Promise<number> {
  let release = (): void => undefined;
  try {
    const inv = parseInvocation(argv);
    if (inv.command === 'help') {
      io.out(USAGE);
      return 0;
    }
    // port-forward runs until interrupted; it ends on SIGINT or SIGTERM by closing its listener and exiting 0.
    // A claim that is waited on is cancelled the same way, so the SDK releases the claim it created
    // instead of leaving a VM bound to a claim nobody holds.
    const interruptible = inv.command === 'port-forward' || inv.command === 'claim';
    if (interruptible && io.interrupted === undefined) {
      const interrupt = interruptSignal();
      release = interrupt.release;
      io = { ...io, interrupted: interrupt.signal };
    }
    return (await run(inv, io)) ?? 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`error: ${err.message}\n\n${USAGE}`);
      return 1;
    }
    const message = isSdkError(err) || isKubeConfigError(err) ? (err as Error).message : describeUnexpected(err);
    io.err(`error: ${message}\n`);
    return 1;
  } finally {
    release();
  }
}

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * A signal aborted by Ctrl-C, SIGTERM or SIGHUP. Once one came the handlers stay until the
 * process exits: the launcher passes a signal on as the terminal also sends it, and the repeat
 * must not kill the process while, or after, it closes (signal handlers keep nothing alive).
 */
function interruptSignal(): { signal: AbortSignal; release: () => void } {
  const ac = new AbortController();
  const onSignal = (): void => ac.abort();
  for (const s of STOP_SIGNALS) process.on(s, onSignal);
  const release = (): void => {
    if (!ac.signal.aborted) for (const s of STOP_SIGNALS) process.off(s, onSignal);
  };
  return { signal: ac.signal, release };
}

/** A connection refused, a TLS failure: the message and its cause, which is where the reason is. */
function describeUnexpected(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error && cause.message !== err.message ? `${err.message}: ${cause.message}` : err.message;
}

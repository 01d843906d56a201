import { isKubeConfigError } from '@sandbox-scale/kube-runtime';
import { isSdkError } from '../errors';
import { COMMANDS, parseInvocation, UsageError, type Command } from './args';
import { SDK_VERSION } from '../version';
import { run, type Io } from './commands';
import { BASH_COMPLETION, complete, formatCompletion, ZSH_COMPLETION } from './completion';
import { clusterLookup } from './completion-lookup';
import { commandHelp, overview } from './help';
import { structured } from './output';

/** The hidden command the completion scripts and kubectl_complete-sandbox ask. */
export const COMPLETE_COMMAND = '__complete';

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
  if (argv[0] === COMPLETE_COMMAND) {
    // a shell waits on this: it answers, and never fails
    io.out(formatCompletion(await complete(argv.slice(1), clusterLookup(argv.slice(1)))));
    return 0;
  }
  try {
    const inv = parseInvocation(argv);
    if (inv.command === 'help') {
      io.out(inv.helpFor ? commandHelp(inv.helpFor) : overview());
      return 0;
    }
    // need no cluster
    if (inv.command === 'version') {
      io.out(
        inv.output === 'json' || inv.output === 'yaml'
          ? structured(inv.output, { sdkVersion: SDK_VERSION })
          : `kubectl-sandbox ${SDK_VERSION}\n`,
      );
      return 0;
    }
    if (inv.command === 'completion') {
      io.out(inv.target === 'zsh' ? ZSH_COMPLETION : BASH_COMPLETION);
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
      const page = knownCommand(argv);
      io.err(`error: ${err.message}\nSee '${page ? `kubectl sandbox ${page} --help` : 'kubectl sandbox --help'}' for usage.\n`);
      return 1;
    }
    const message = isSdkError(err) || isKubeConfigError(err) ? (err as Error).message : describeUnexpected(err);
    io.err(`error: ${message}\n`);
    return 1;
  } finally {
    release();
  }
}

/** The command a refused line was for, so its error points at that command's page. */
function knownCommand(argv: readonly string[]): Command | undefined {
  return argv.find((a): a is Command => (COMMANDS as readonly string[]).includes(a));
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

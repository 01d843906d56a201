/**
 * An AbortSignal that aborts on the first SIGTERM or SIGINT. Both listeners are then removed,
 * so a second signal gets Node's default behaviour and ends a shutdown that hangs.
 */
export function setupSignalHandler(proc: NodeJS.Process = process): AbortSignal {
  const ac = new AbortController();
  const onSignal = (sig: NodeJS.Signals): void => {
    proc.off('SIGTERM', onSignal);
    proc.off('SIGINT', onSignal);
    ac.abort(new Error(`received ${sig}`));
  };
  proc.once('SIGTERM', onSignal);
  proc.once('SIGINT', onSignal);
  return ac.signal;
}

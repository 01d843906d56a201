/**
 * Runs `fn` with a signal that aborts when `parent` does (with its reason) or after `timeoutMs`
 * (a TimeoutError, as AbortSignal.timeout gives), and lets go of `parent` once `fn` settles.
 *
 * Why not AbortSignal.any([parent, AbortSignal.timeout(ms)]): on Node 20 every such call leaves
 * an entry in the long-lived parent that is never removed, so a process making one call per
 * claim grows without bound; and a parent shared by many concurrent calls collects their
 * listeners. Here the parent holds one listener per call in flight, removed when it ends.
 */
export async function withDeadline<T>(
  parent: AbortSignal | undefined,
  timeoutMs: number,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  // nothing to link: the platform's own timeout signal is the cheapest there is
  if (parent === undefined) return fn(AbortSignal.timeout(timeoutMs));
  const ac = new AbortController();
  const onAbort = (): void => ac.abort(parent.reason);
  if (parent.aborted) ac.abort(parent.reason);
  else parent.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => ac.abort(new DOMException(`the call did not end within ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
  timer.unref?.();
  try {
    return await fn(ac.signal);
  } finally {
    clearTimeout(timer);
    parent.removeEventListener('abort', onAbort);
  }
}

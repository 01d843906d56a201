import type { KubeConfig } from '@kubernetes/client-node';
import { KubeListWatcher, type ListWatcher } from '@sandbox-scale/kube-runtime';
import { RESOURCES } from '@sandbox-scale/scale-core';
import { ClaimObjectSchema, claimPhase, type ClaimObject, type ClaimPhase } from './claim-status';
import { wait } from './deadline';

/** A claim's settled phase: Ready (bound to a sandbox) or Failed. */
export type SettledPhase = Exclude<ClaimPhase, { state: 'pending' }>;

/** How long a watch of one claim is held before it is resumed from a fresh read. */
const WATCH_SECONDS = 60;
/** Between reads, where the caller may read a claim but not watch it. */
const POLL_MS = 250;

/**
 * Waits until a claim settles: a read, then a watch of that one claim (a field selector on its
 * name) from the read's resourceVersion, so Ready is seen when the controller writes it rather
 * than up to a poll interval later, with one request held open instead of four a second. A
 * watch that ends (its timeout, a 410) is resumed from a new read; a watch the caller may not
 * make (a role with get but not watch) falls back to reading every 250 ms. Ends with the
 * signal's abort, as the read does.
 */
export function waitForClaim(
  kc: KubeConfig,
  o: { namespace: string; name: string; signal: AbortSignal | undefined; read: () => Promise<ClaimObject> },
): Promise<SettledPhase> {
  const watcher = new KubeListWatcher(kc, RESOURCES.sandboxClaim, {
    namespace: o.namespace,
    fieldSelector: `metadata.name=${o.name}`,
    watchTimeoutSeconds: WATCH_SECONDS,
  });
  return waitWith(watcher, o);
}

/** The wait itself, over any watch of the one claim (a seam, so the loop is tested without a server). */
export async function waitWith(
  watcher: Pick<ListWatcher, 'watch'>,
  o: { signal: AbortSignal | undefined; read: () => Promise<ClaimObject> },
): Promise<SettledPhase> {
  let watchable = true;
  for (;;) {
    const claim = await o.read();
    const phase = claimPhase(claim);
    if (phase.state !== 'pending') return phase;
    const rv = claim.metadata.resourceVersion;
    if (!watchable || rv === undefined) {
      await wait(POLL_MS, o.signal);
      continue;
    }
    const settled = await watchUntilSettled(watcher, rv, o.signal).catch(() => {
      watchable = false;
      return undefined;
    });
    if (settled !== undefined) return settled;
    // the watch ended, or the claim went away (the read says how): read again
  }
}

async function watchUntilSettled(
  watcher: Pick<ListWatcher, 'watch'>,
  resourceVersion: string,
  signal: AbortSignal | undefined,
): Promise<SettledPhase | undefined> {
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) stop.abort();
  let settled: SettledPhase | undefined;
  try {
    await watcher.watch({
      resourceVersion,
      signal: stop.signal,
      onEvent: (type, obj) => {
        if (settled !== undefined) return;
        if (type === 'DELETED') return stop.abort();
        if (type === 'BOOKMARK') return;
        const parsed = ClaimObjectSchema.safeParse(obj);
        if (!parsed.success) return;
        const phase = claimPhase(parsed.data);
        if (phase.state === 'pending') return;
        settled = phase;
        stop.abort();
      },
    });
    return settled;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * Follow mode: retry the same request with `no_redirect` at each candidate in order (the node's
 * redirect, less the addresses no known inventory advertises: KnownNodeAddresses), one hop
 * only. Any failure at a peer moves on (a 401 there is a peer mid token rotation, a refusal
 * is a stale gossip view); when every peer failed, the entry node is asked once more with
 * `no_redirect`, so it serves locally, and its answer is final.
 */
export async function followRedirect<T>(
  candidates: readonly string[],
  entryUrl: string,
  attempt: (nodeUrl: string) => Promise<T>,
  signal: AbortSignal | undefined,
): Promise<T> {
  for (const url of candidates) {
    try {
      return await attempt(url);
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      void err;
    }
  }
  return attempt(entryUrl);
}

/** `p`, or a rejection with `abortError(reason)` as soon as `signal` aborts; the listener goes when either happens. */
export function untilAborted<T>(p: Promise<T>, signal: AbortSignal, abortError: (reason: unknown) => Error): Promise<T> {
  if (signal.aborted) return Promise.reject(abortError(signal.reason));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortError(signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

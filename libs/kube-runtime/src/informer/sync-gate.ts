/** A one-way latch: closed until open() is called once; waiters may give up via a signal. */
export class SyncGate {
  private opened = false;
  private readonly waiters = new Set<() => void>();

  get done(): boolean {
    return this.opened;
  }

  open(): void {
    if (this.opened) return;
    this.opened = true;
    for (const w of this.waiters) w();
    this.waiters.clear();
  }

  wait(signal?: AbortSignal): Promise<boolean> {
    if (this.opened) return Promise.resolve(true);
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const onAbort = (): void => {
        this.waiters.delete(onOpen);
        resolve(false);
      };
      const onOpen = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve(true);
      };
      this.waiters.add(onOpen);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

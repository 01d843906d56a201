import type { ListResult, ListWatcher, WatchEnd, WatchRequest } from '../informer/list-watcher';

interface OpenWatch {
  req: WatchRequest;
  end: (e: WatchEnd) => void;
  fail: (err: unknown) => void;
}

/** A scripted ListWatcher: tests push list answers and drive the open watch by hand. */
export class FakeListWatcher implements ListWatcher {
  readonly lists: Array<ListResult | Error> = [];
  readonly watchRvs: string[] = [];
  listCalls = 0;
  private open: OpenWatch | undefined;
  private waiters: Array<() => void> = [];

  async list(): Promise<ListResult> {
    this.listCalls++;
    const next = this.lists.shift();
    if (!next) throw new Error('no list scripted');
    if (next instanceof Error) throw next;
    return next;
  }

  watch(req: WatchRequest): Promise<WatchEnd> {
    this.watchRvs.push(req.resourceVersion);
    return new Promise<WatchEnd>((resolve, reject) => {
      const close = (): void => {
        this.open = undefined;
      };
      this.open = {
        req,
        end: (e) => {
          close();
          resolve(e);
        },
        fail: (err) => {
          close();
          reject(err);
        },
      };
      if (req.signal.aborted) return this.open.end('ended');
      req.signal.addEventListener('abort', () => this.open?.end('ended'), { once: true });
      const w = this.waiters;
      this.waiters = [];
      for (const f of w) f();
    });
  }

  /** Resolves once a watch is open (the informer has listed and started watching). */
  async watching(): Promise<OpenWatch> {
    while (!this.open) await new Promise<void>((r) => this.waiters.push(r));
    return this.open;
  }
}

export function cm(name: string, rv: string, data: Record<string, unknown> = {}, namespace = 'ns'): unknown {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, uid: `uid-${name}`, resourceVersion: rv }, data };
}

import { type KubeConfig, Watch } from '@kubernetes/client-node';
import { z } from 'zod';
import { SandboxScaleError, findInCauseChain } from '@sandbox-scale/scale-core';
import { apiStatusOf } from '../client/api-errors';
import { kubeRequest } from '../client/kube-request';
import { kubeTransport } from '../client/kube-transport';
import { type KubeResource, apiVersionOf, resourcePath } from '../client/resource';

export interface ListResult {
  items: unknown[];
  resourceVersion: string;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

/** How a watch ended without error: cleanly (resume from the last resourceVersion) or 410 Gone (relist). */
export type WatchEnd = 'ended' | 'gone';

export interface WatchRequest {
  resourceVersion: string;
  onEvent: (type: WatchEventType, obj: unknown) => void;
  signal: AbortSignal;
}

/** The two calls an informer makes; a seam so the informer's loop is tested without a server. */
export interface ListWatcher {
  list(signal: AbortSignal): Promise<ListResult>;
  /** Resolves when the stream ends; rejects on any error other than 410 Gone. */
  watch(req: WatchRequest): Promise<WatchEnd>;
}

export interface ListWatchScope {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Server-side watch timeout; the stream then ends cleanly and is resumed. Default 5-10 min. */
  watchTimeoutSeconds?: number;
}

const ListSchema = z.object({
  metadata: z.object({ resourceVersion: z.string().optional(), continue: z.string().optional() }).optional(),
  items: z.array(z.unknown()).nullable().optional(),
});

/** A watch that failed with an error status or transport failure; statusCode as client-node reports it. */
export class WatchFailedError extends SandboxScaleError {
  constructor(
    message: string,
    readonly code: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function isWatchFailed(err: unknown): boolean {
  return findInCauseChain(err, 'WatchFailedError') !== undefined;
}

function withTypeMeta(item: unknown, res: KubeResource): unknown {
  // Items of a built-in list carry no apiVersion/kind; typed parsers expect them.
  if (typeof item !== 'object' || item === null) return item;
  return { apiVersion: apiVersionOf(res), kind: res.kind, ...item };
}

/** List + watch over client-node: a LIST at resourceVersion=0 and client-node's Watch with bookmarks, both over the kubeconfig's kept-alive transport. */
export class KubeListWatcher implements ListWatcher {
  private readonly watcher: Watch;

  constructor(
    private readonly kc: KubeConfig,
    private readonly res: KubeResource,
    private readonly scope: ListWatchScope = {},
  ) {
    // watches hold their connection for minutes: they use the transport's own watch pool
    this.watcher = new Watch(kubeTransport(kc).watchConfig);
  }

  private get path(): string {
    return resourcePath(this.res, { namespace: this.scope.namespace });
  }

  async list(signal: AbortSignal): Promise<ListResult> {
    const items: unknown[] = [];
    let cont: string | undefined;
    let resourceVersion = '';
    do {
      const page = ListSchema.parse(
        await kubeRequest(this.kc, {
          method: 'GET',
          path: this.path,
          // rv=0 is answered from the watch cache; a continuation must drop it.
          query: {
            resourceVersion: cont ? undefined : '0',
            continue: cont,
            labelSelector: this.scope.labelSelector,
            fieldSelector: this.scope.fieldSelector,
          },
          signal,
        }),
      );
      for (const item of page.items ?? []) items.push(withTypeMeta(item, this.res));
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
      cont = page.metadata?.continue || undefined;
    } while (cont);
    return { items, resourceVersion };
  }

  watch(req: WatchRequest): Promise<WatchEnd> {
    const timeout = this.scope.watchTimeoutSeconds ?? Math.floor(300 + Math.random() * 300);
    const query = {
      resourceVersion: req.resourceVersion,
      allowWatchBookmarks: true,
      timeoutSeconds: timeout,
      labelSelector: this.scope.labelSelector,
      fieldSelector: this.scope.fieldSelector,
    };
    return new Promise<WatchEnd>((resolve, reject) => {
      let failure: WatchFailedError | 'gone' | undefined;
      let controller: AbortController | undefined;
      const abort = (): void => controller?.abort();
      req.signal.addEventListener('abort', abort, { once: true });
      const onLine = (type: string, obj: unknown): void => {
        if (failure) return;
        if (type === 'ERROR') {
          const code = z.object({ code: z.number() }).safeParse(obj);
          failure =
            code.success && code.data.code === 410
              ? 'gone'
              : new WatchFailedError(`watch error event: ${JSON.stringify(obj)}`, code.success ? code.data.code : undefined);
          abort();
          return;
        }
        if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED' || type === 'BOOKMARK')
          req.onEvent(type, type === 'BOOKMARK' ? obj : withTypeMeta(obj, this.res));
      };
      const onDone = (err: unknown): void => {
        req.signal.removeEventListener('abort', abort);
        if (failure === 'gone') return resolve('gone');
        if (failure) return reject(failure);
        if (req.signal.aborted || !err) return resolve('ended');
        const status = apiStatusOf(err);
        if (status?.code === 410) return resolve('gone');
        reject(new WatchFailedError(`watch failed: ${(err as Error).message ?? String(err)}`, status?.code, { cause: err }));
      };
      this.watcher.watch(this.path, query, onLine, onDone).then(
        (c) => {
          controller = c;
          if (req.signal.aborted || failure) c.abort();
        },
        (err: unknown) => onDone(err ?? new Error('watch failed')),
      );
    });
  }
}

import { Code, ConnectError, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { EventType, type Filesystem, type FilesystemEventSchema } from '../gen/filesystem/filesystem_pb';
import { guarded } from './errors';
import { entryInfo } from './entry-info';
import { keepEvent, MAX_WATCHER_EVENTS, MAX_WATCHERS } from './envd-state';
import type { EnvdGuest, WatchEventType } from './guest';

const EVENT_TYPE: Record<WatchEventType, EventType> = {
  create: EventType.CREATE,
  write: EventType.WRITE,
  remove: EventType.REMOVE,
  rename: EventType.RENAME,
  chmod: EventType.CHMOD,
};
/** ListDir's depth: the SDK sends 1; deeper walks are bounded. */
const MAX_DEPTH = 16;

const required = (path: string, field = 'path'): string => {
  if (path === '') throw new ConnectError(`${field} is required`, Code.InvalidArgument);
  return path;
};

function watcherSlot(guest: EnvdGuest): void {
  if (guest.state.watcherCount >= MAX_WATCHERS)
    throw new ConnectError(`${MAX_WATCHERS} watchers are open in this sandbox already`, Code.ResourceExhausted);
}

const fsEvent = (name: string, type: WatchEventType): MessageInitShape<typeof FilesystemEventSchema> => ({ name, type: EVENT_TYPE[type] });

/** envd's `filesystem.Filesystem`, over the guest that `guestOf` finds for the call. */
export function filesystemService(guestOf: (ctx: HandlerContext) => EnvdGuest): ServiceImpl<typeof Filesystem> {
  return {
    async stat(req, ctx) {
      const guest = guestOf(ctx);
      return { entry: entryInfo(await guarded(() => guest.stat(required(req.path)))) };
    },

    async makeDir(req, ctx) {
      const guest = guestOf(ctx);
      const made = await guarded(() => guest.makeDir(required(req.path)));
      if (made === undefined) throw new ConnectError(`directory ${req.path} exists already`, Code.AlreadyExists);
      return { entry: entryInfo(made) };
    },

    async move(req, ctx) {
      const guest = guestOf(ctx);
      return {
        entry: entryInfo(await guarded(() => guest.move(required(req.source, 'source'), required(req.destination, 'destination')))),
      };
    },

    async listDir(req, ctx) {
      const guest = guestOf(ctx);
      const depth = req.depth === 0 ? 1 : req.depth;
      if (depth > MAX_DEPTH) throw new ConnectError(`depth is at most ${MAX_DEPTH}`, Code.InvalidArgument);
      return { entries: (await guarded(() => guest.listDir(required(req.path), depth))).map(entryInfo) };
    },

    async remove(req, ctx) {
      const guest = guestOf(ctx);
      await guarded(() => guest.remove(required(req.path)));
      return {};
    },

    async *watchDir(req, ctx) {
      const guest = guestOf(ctx);
      watcherSlot(guest);
      const queue: MessageInitShape<typeof FilesystemEventSchema>[] = [];
      let wake: (() => void) | undefined;
      let overflow = false;
      const stop = await guarded(() =>
        guest.watch(required(req.path), req.recursive, (name, type) => {
          if (queue.length >= MAX_WATCHER_EVENTS) overflow = true;
          else queue.push(fsEvent(name, type));
          wake?.();
        }),
      );
      const s = Number(ctx.requestHeader.get('keepalive-ping-interval'));
      const idleMs = Number.isFinite(s) && s > 0 ? s * 1000 : 50_000;
      try {
        yield { event: { case: 'start', value: {} } };
        while (!ctx.signal.aborted) {
          const e = queue.shift();
          if (e !== undefined) {
            yield { event: { case: 'filesystem', value: e } };
            continue;
          }
          if (overflow) throw new ConnectError('the watcher fell behind and lost events', Code.ResourceExhausted);
          const woke = await new Promise<boolean>((resolve) => {
            const t = setTimeout(() => resolve(false), idleMs);
            const done = (): void => {
              clearTimeout(t);
              ctx.signal.removeEventListener('abort', done);
              wake = undefined;
              resolve(true);
            };
            wake = done;
            ctx.signal.addEventListener('abort', done, { once: true });
          });
          if (!woke) yield { event: { case: 'keepalive', value: {} } };
        }
      } finally {
        stop();
      }
    },

    async createWatcher(req, ctx) {
      const guest = guestOf(ctx);
      watcherSlot(guest);
      // events seen before the watcher is registered are kept, then it collects into its own list
      let sink: { name: string; type: WatchEventType }[] = [];
      const stop = await guarded(() => guest.watch(required(req.path), req.recursive, (name, type) => keepEvent(sink, { name, type })));
      const watcherId = guest.state.addWatcher((events) => {
        events.push(...sink);
        sink = events;
        return stop;
      });
      return { watcherId };
    },

    getWatcherEvents(req, ctx) {
      const events = guestOf(ctx).state.drainWatcher(req.watcherId);
      if (events === undefined) throw new ConnectError(`watcher ${JSON.stringify(req.watcherId)} not found`, Code.NotFound);
      return { events: events.map((e) => fsEvent(e.name, e.type)) };
    },

    removeWatcher(req, ctx) {
      if (!guestOf(ctx).state.removeWatcher(req.watcherId))
        throw new ConnectError(`watcher ${JSON.stringify(req.watcherId)} not found`, Code.NotFound);
      return {};
    },
  };
}

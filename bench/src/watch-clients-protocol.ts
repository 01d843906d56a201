/** What bench:scale and its watcher process (watch-clients.ts) say to each other over IPC. */
import { z } from 'zod';

export const WatchTargetSchema = z.object({
  hostname: z.string(),
  port: z.string(),
  ca: z.string(),
  cert: z.string(),
  key: z.string(),
});
export type WatchTarget = z.infer<typeof WatchTargetSchema>;

export const ToWatchersSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('open'), target: WatchTargetSchema, path: z.string(), count: z.number().int().positive() }),
  z.object({ type: z.literal('await'), expected: z.number().int().positive() }),
  z.object({ type: z.literal('close') }),
]);
export type ToWatchers = z.infer<typeof ToWatchersSchema>;

export const FromWatchersSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('failed'), error: z.string() }),
  z.object({
    type: z.literal('delivered'),
    /** Wall-clock ms of the first MODIFIED event since the last await was answered. */
    firstEventAt: z.number(),
    /** Wall-clock ms at which one watch, then every watch, had seen `expected`. */
    firstWatchDoneAt: z.number(),
    allDoneAt: z.number(),
    /** CPU ms this process spent since the last await was answered (parsing and counting). */
    cpuMs: z.number(),
    /** Bytes of events received, all watches. */
    bytes: z.number(),
  }),
]);
export type FromWatchers = z.infer<typeof FromWatchersSchema>;

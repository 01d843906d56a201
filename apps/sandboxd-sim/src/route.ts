import type { z } from 'zod';
import type { Verb } from './faults';
import { decodeBody, type Reply } from './http-io';
import type { NodeState } from './node-state';

const NEVER = new AbortController().signal;

/** What a handler gets: the node, path params, query, bearer and the raw body. */
export class RouteCtx {
  /** Aborted when the caller hangs up before the reply is written. */
  signal: AbortSignal = NEVER;

  constructor(
    readonly node: NodeState,
    readonly id: string,
    readonly query: URLSearchParams,
    readonly bearer: string | undefined,
    readonly rawBody: Buffer,
  ) {}

  body<S extends z.ZodType>(schema: S, allowEmpty = false): z.output<S> {
    return decodeBody(this.rawBody, schema, allowEmpty);
  }

  text(): string {
    return this.rawBody.toString('utf8');
  }
}

export interface Route {
  method: string;
  /** Segments; `:id` captures one (URL-decoded); any other `:name` matches one non-empty segment the handler reads itself. */
  path: string;
  /** The fault-injection verb; routes without one are never faulted. */
  verb?: Verb;
  handle: (ctx: RouteCtx) => Promise<Reply> | Reply;
}

export type RouteMatch = { route: Route; id: string } | { status: 404 | 405 };

/** Linear match over the table: a known path with the wrong method is 405, like Go's mux. */
export function matchRoute(routes: readonly Route[], method: string, pathname: string): RouteMatch {
  const parts = pathname.split('/');
  let pathKnown = false;
  for (const route of routes) {
    const pattern = route.path.split('/');
    if (pattern.length !== parts.length) continue;
    let id = '';
    let ok = true;
    for (let i = 0; i < pattern.length && ok; i++) {
      const p = pattern[i] as string;
      const seg = parts[i] as string;
      if (p === ':id') {
        id = safeDecode(seg);
        ok = id !== '';
      } else if (p.startsWith(':')) ok = seg !== '';
      else ok = p === seg;
    }
    if (!ok) continue;
    pathKnown = true;
    if (route.method === method) return { route, id };
  }
  return { status: pathKnown ? 405 : 404 };
}

function safeDecode(seg: string): string {
  try {
    return decodeURIComponent(seg);
  } catch {
    return seg;
  }
}

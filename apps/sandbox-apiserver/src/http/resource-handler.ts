import type { IncomingMessage, ServerResponse } from 'node:http';
import { StatusError, type ServedSandbox } from '@sandbox-scale/scale-core';
import { metadataOnly } from '../resource/partial-metadata';
import { isReadAction } from '../discovery';
import type { ObjectList, ResourceStorage } from '../storage/rest';
import { createWarnings } from '../storage/create-sandbox';
import { serveWatch } from '../watch/watch-stream';
import { readBody } from './body';
import { checkUnknownFields, fieldValidationOf } from './field-validation';
import { parseListQuery } from './list-query';
import { decodeContinue, type ListQuery } from '../resource/list-query';
import type { ResponseShape } from './negotiate';
import { writeList, type ListBody } from './list-writer';
import { APPLY_PATCH_TYPE } from '../storage/patch-sandbox';
import { fieldManagerOf, forceOf, patchTypeOf, readPatch } from './patch-request';
import { dryRunParam, includeObjectOf } from './query-params';
import type { RequestInfo } from './request-info';
import { sendJson } from '@sandbox-scale/kube-runtime';

type ResourceInfo = Extract<RequestInfo, { isResource: true }>;

export interface HandlerContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly info: ResourceInfo;
  readonly shape: ResponseShape;
  readonly storage: ResourceStorage;
  readonly bookmarkIntervalMs: number;
}

/** One object as the response shape asks: as is, its metadata, or a one-row Table. */
function sendObject(c: HandlerContext, code: number, obj: ServedSandbox | Record<string, unknown>): void {
  const s = obj as ServedSandbox;
  if (c.shape.kind === 'table' && s.kind === c.storage.kind) {
    sendJson(
      c.res,
      code,
      c.storage.convertToTable([s], {
        resourceVersion: s.metadata.resourceVersion ?? '',
        include: includeObjectOf(c.url.searchParams.get('includeObject')),
        version: c.shape.version,
      }),
    );
  } else if (c.shape.kind === 'metadata' && s.kind === c.storage.kind) {
    sendJson(c.res, code, metadataOnly(s, c.shape.version));
  } else {
    sendJson(c.res, code, obj);
  }
}

/** Items per part of a list served whole: what is held at once while the response is written. */
export const WHOLE_LIST_PART = 1000;

/**
 * The fewest rows a Table page holds, whatever the request's `limit` (servers may ignore
 * `limit`). A Table's reader is a person at kubectl, which sends `limit=500`
 * but holds every page before it prints any, and whose client allows 5 requests a second after
 * a burst of 10: 100,000 sandboxes in pages of 500 spent 38 s of the client's own throttling.
 * Pages of 25,000 rows (about 15 MB) keep 100,000 sandboxes within 4 requests and a million
 * within 40, each well inside kube-apiserver's 60 s limit on a proxied request, where one
 * Table of a million (600 MB) would not be. Lists of objects (informers, controllers) keep the
 * client's limit: a client that pages them means it.
 */
export const TABLE_PAGE_ROWS = 25_000;

/** A list (one page of it) as the response shape asks: objects, their metadata, or a Table. */
function bodyOf(c: HandlerContext, list: ObjectList, now: Date): ListBody {
  const { shape } = c;
  if (shape.kind === 'table') {
    const include = includeObjectOf(c.url.searchParams.get('includeObject'));
    const body = c.storage.convertToTable(list.items, {
      resourceVersion: list.metadata.resourceVersion,
      ...(list.metadata.continue ? { continue: list.metadata.continue } : {}),
      include,
      version: shape.version,
      now,
    });
    return { body, key: 'rows' };
  }
  if (shape.kind === 'metadata') {
    const body = {
      kind: 'PartialObjectMetadataList',
      apiVersion: `meta.k8s.io/${shape.version}`,
      metadata: list.metadata,
      items: list.items.map((s) => metadataOnly(s, shape.version)),
    };
    return { body, key: 'items' };
  }
  return { body: list as unknown as Record<string, unknown>, key: 'items' };
}

/**
 * The pages of a list served whole, pulled one at a time: the storage's own pages of
 * WHOLE_LIST_PART, every one cut from the snapshot the first page took (a continue token
 * each, O(log n + part) apiece), under the first page's resourceVersion and no continue.
 */
async function* wholeList(c: HandlerContext, q: ListQuery, now: Date): AsyncGenerator<ListBody> {
  let page = await c.storage.list({ ...q, limit: WHOLE_LIST_PART });
  const metadata = { resourceVersion: page.metadata.resourceVersion };
  for (;;) {
    const next = page.metadata.continue;
    yield bodyOf(c, { ...page, metadata }, now);
    if (next === undefined || next === '') return;
    page = await c.storage.list({ ...q, limit: WHOLE_LIST_PART, continue: decodeContinue(next) });
  }
}

/** One page's body in parts of WHOLE_LIST_PART, the first carrying the page's envelope (its continue token included). */
function* partsOf(c: HandlerContext, page: ObjectList, now: Date): Generator<ListBody> {
  for (let i = 0; i === 0 || i < page.items.length; i += WHOLE_LIST_PART)
    yield bodyOf(c, { ...page, items: page.items.slice(i, i + WHOLE_LIST_PART) }, now);
}

async function sendList(c: HandlerContext, q: ListQuery): Promise<void> {
  const now = new Date();
  if (q.limit === 0) return writeList(c.res, wholeList(c, q, now));
  if (c.shape.kind === 'table')
    return writeList(c.res, partsOf(c, await c.storage.list({ ...q, limit: Math.max(q.limit, TABLE_PAGE_ROWS) }), now));
  sendJson(c.res, 200, bodyOf(c, await c.storage.list(q), now).body);
}

/** The name of a transform every watch shares (the same bytes for the same object); a table's is its own. */
function sharedEncodingOf(c: HandlerContext): string | undefined {
  const { shape } = c;
  if (shape.kind === 'metadata') return `metadata/${shape.version}`;
  if (shape.kind !== 'table') return 'object';
  return undefined;
}

function sharedEncodingOption(c: HandlerContext): { sharedEncoding?: string } {
  const sharedEncoding = sharedEncodingOf(c);
  return sharedEncoding === undefined ? {} : { sharedEncoding };
}

/** Each watch event's object as the response shape asks; a Table's columns come with the first event only. */
function watchTransform(c: HandlerContext): (object: ServedSandbox) => unknown {
  const { shape } = c;
  if (shape.kind === 'metadata') return (s) => metadataOnly(s, shape.version);
  if (shape.kind !== 'table') return (s) => s;
  const include = includeObjectOf(c.url.searchParams.get('includeObject'));
  let columns = true;
  return (s) => {
    const table = c.storage.convertToTable([s], { resourceVersion: s.metadata.resourceVersion, include, version: shape.version, columns });
    columns = false;
    return table;
  };
}

/**
 * The generic resource handler: translates a request on any installed resource (its collection,
 * one object, or a subresource action) to the calls of its storage; no logic of its own.
 */
export async function handleResource(c: HandlerContext): Promise<void> {
  const { info, req, storage } = c;
  const method = req.method ?? 'GET';
  const name = info.pathName;
  if (info.subresource !== '') {
    if (method === 'GET' && isReadAction(info.subresource)) {
      // stats and snapshots read: a GET's body and query (dryRun, an action's options) are never
      // handed on, so no GET can act; the answer is POST's, with a read's 200
      sendJson(c.res, 200, await storage.act(info.namespace, name, info.subresource, undefined, false));
      return;
    }
    if (method !== 'POST') throw new StatusError('MethodNotAllowed', `${method} is not supported on ${info.resource}/${info.subresource}`);
    const body = await readBody(req);
    sendJson(c.res, 201, await storage.act(info.namespace, name, info.subresource, body, dryRunParam(c.url)));
    return;
  }
  if ((method === 'GET' || method === 'HEAD') && name === '') {
    const q = parseListQuery(info.namespace, c.url.searchParams, storage.selectableFields);
    if (info.verb === 'watch')
      return serveWatch(req, c.res, storage, q, {
        params: c.url.searchParams,
        transform: watchTransform(c),
        ...sharedEncodingOption(c),
        bookmarkIntervalMs: c.bookmarkIntervalMs,
      });
    return sendList(c, q);
  }
  if (method === 'GET') return sendObject(c, 200, await storage.get(info.namespace, name));
  if (method === 'POST' && name === '') {
    if (info.namespace === '')
      throw new StatusError(
        'MethodNotAllowed',
        `create requires a namespace: POST /apis/${storage.apiVersion}/namespaces/{namespace}/${info.resource}`,
      );
    const body = await readBody(req);
    // before any VM is spent: Strict refuses a body with fields the schema lacks
    const warnings = checkUnknownFields(body, fieldValidationOf(c.url.searchParams.get('fieldValidation')), storage.schema);
    const fieldManager = fieldManagerOf(c.url.searchParams, req.headers['user-agent'], false);
    const created = await storage.create(info.namespace, body, { dryRun: dryRunParam(c.url), fieldManager });
    // what the create accepted but a microVM does not apply (runtimeClassName, command, sidecars, ...)
    if (storage.kind === 'Sandbox') warnings.push(...createWarnings(body));
    if (warnings.length > 0) c.res.setHeader('Warning', warnings);
    sendJson(c.res, 201, created);
    return;
  }
  if (method === 'PATCH' && name !== '') {
    const dryRun = dryRunParam(c.url);
    const type = patchTypeOf(req.headers['content-type']);
    const apply = type === APPLY_PATCH_TYPE;
    const fieldManager = fieldManagerOf(c.url.searchParams, req.headers['user-agent'], apply);
    const force = forceOf(c.url.searchParams, apply);
    const patch = await readPatch(req, type);
    const r = await storage.patch(info.namespace, name, { type, patch, dryRun, fieldManager, force });
    // a server-side apply of a name that did not exist created it
    if (r.created) {
      sendJson(c.res, 201, r.object);
      return;
    }
    return sendObject(c, 200, r.object as ServedSandbox);
  }
  if (method === 'DELETE' && name !== '') {
    const body = await readBody(req);
    return sendObject(c, 200, await storage.delete(info.namespace, name, { dryRun: dryRunParam(c.url), body }));
  }
  throw new StatusError(
    'MethodNotAllowed',
    `${method} is not supported on ${info.resource} (served verbs: get, list, watch, create, patch, delete)`,
  );
}

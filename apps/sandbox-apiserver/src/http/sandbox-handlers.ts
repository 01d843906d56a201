import type { IncomingMessage, ServerResponse } from 'node:http';
import { StatusError, type ServedSandbox } from '@sandbox-scale/scale-core';
import type { ResourceStorage } from '../storage';
import type { SandboxVerbs } from '../peers/sandbox-verbs';
import { dryRunOf } from '../storage/delete-sandbox';
import { checkUnknownFields, fieldValidationOf } from '../storage/field-validation';
import { parseListQuery } from '../storage/list-query';
import { includeObjectOf, metadataOnly, sandboxTable } from '../storage/sandbox-table';
import { serveWatch, type WatchContext } from '../watch/watch-stream';
import { readBody } from './body';
import type { ResponseShape } from './negotiate';
import type { RequestInfo } from './request-info';
import { sendJson } from '@sandbox-scale/kube-runtime';
import { patchSandbox, userMetadataOfCreate } from './patch-handler';

type ResourceInfo = Extract<RequestInfo, { isResource: true }>;

export interface HandlerContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly info: ResourceInfo;
  readonly shape: ResponseShape;
  readonly storage: ResourceStorage;
  /** create/get/delete/actions on one name: the same answer whichever replica is asked. */
  readonly verbs: SandboxVerbs;
  readonly watch: WatchContext;
}

function sendObject(c: HandlerContext, code: number, obj: ServedSandbox | Record<string, unknown>): void {
  const s = obj as ServedSandbox;
  if (c.shape.kind === 'table' && s.kind === 'Sandbox') {
    sendJson(c.res, code, sandboxTable([s], { resourceVersion: s.metadata.resourceVersion ?? '', include: includeObjectOf(c.url.searchParams.get('includeObject')), version: c.shape.version }));
  } else if (c.shape.kind === 'metadata' && s.kind === 'Sandbox') {
    sendJson(c.res, code, metadataOnly(s, c.shape.version));
  } else {
    sendJson(c.res, code, obj);
  }
}

function handleList(c: HandlerContext): void {
  const q = parseListQuery(c.info.namespace, c.url.searchParams);
  if (c.info.verb === 'watch') return serveWatch(c.req, c.res, c.watch, q, c.shape, c.url);
  const list = c.storage.reads.list(q);
  if (c.shape.kind === 'table') {
    sendJson(c.res, 200, sandboxTable(list.items, { resourceVersion: list.metadata.resourceVersion, ...(list.metadata.continue ? { continue: list.metadata.continue } : {}), include: includeObjectOf(c.url.searchParams.get('includeObject')), version: c.shape.version }));
  } else if (c.shape.kind === 'metadata') {
    sendJson(c.res, 200, { kind: 'PartialObjectMetadataList', apiVersion: `meta.k8s.io/${c.shape.version}`, metadata: list.metadata, items: list.items.map((s) => metadataOnly(s, c.shape.kind === 'metadata' ? c.shape.version : 'v1')) });
  } else {
    sendJson(c.res, 200, list);
  }
}

const dryRunParam = (url: URL): boolean => dryRunOf(url.searchParams.getAll('dryRun'));

/** Translates HTTP to storage calls for `sandboxes` and its actions; no logic of its own. */
export async function handleSandboxes(c: HandlerContext): Promise<void> {
  const { info, req } = c;
  const method = req.method ?? 'GET';
  if (info.subresource !== '') {
    if (method !== 'POST') throw new StatusError('MethodNotAllowed', `${method} is not supported on sandboxes/${info.subresource}`);
    const body = await readBody(req);
    sendJson(c.res, 201, await c.verbs.act(info.namespace, nameOf(c), info.subresource, body, dryRunParam(c.url)));
    return;
  }
  const hasName = nameOf(c) !== '';
  if ((method === 'GET' || method === 'HEAD') && !hasName) return handleList(c);
  if (method === 'GET' && hasName) return sendObject(c, 200, await c.verbs.get(info.namespace, nameOf(c)));
  if (method === 'POST' && !hasName) {
    if (info.namespace === '') throw new StatusError('MethodNotAllowed', 'create requires a namespace: POST /apis/agents.x-k8s.io/v1beta1/namespaces/{namespace}/sandboxes');
    const body = await readBody(req);
    // before any VM is spent: Strict refuses a body with fields the schema lacks
    const warnings = checkUnknownFields(body, fieldValidationOf(c.url.searchParams.get('fieldValidation')));
    const created = await c.verbs.create(info.namespace, body, { dryRun: dryRunParam(c.url) });
    // labels and annotations of the request outlive the create response (the node keeps none)
    const md = userMetadataOfCreate(body);
    if (md !== undefined && !dryRunParam(c.url) && c.storage.metadata !== undefined && created.metadata.uid) await c.storage.metadata.set(info.namespace, created.metadata.name ?? '', created.metadata.uid, md);
    if (warnings.length > 0) c.res.setHeader('Warning', warnings);
    sendJson(c.res, 201, created);
    return;
  }
  if (method === 'PATCH' && hasName) {
    return sendObject(c, 200, await patchSandbox({ req, namespace: info.namespace, name: nameOf(c), dryRun: dryRunParam(c.url), verbs: c.verbs, view: c.storage.view, store: c.storage.metadata }));
  }
  if (method === 'DELETE' && hasName) {
    const body = await readBody(req);
    return sendObject(c, 200, await c.verbs.delete(info.namespace, nameOf(c), { dryRun: dryRunParam(c.url), body }));
  }
  throw new StatusError('MethodNotAllowed', `${method} is not supported on sandboxes (served verbs: get, list, watch, create, patch, delete)`);
}

/** The name from the path (not a field selector's), as request-info parsed it for authorization. */
function nameOf(c: HandlerContext): string {
  return c.info.pathName;
}

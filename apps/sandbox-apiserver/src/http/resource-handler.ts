import type { IncomingMessage, ServerResponse } from 'node:http';
import { StatusError, type ServedSandbox } from '@sandbox-scale/scale-core';
import { metadataOnly } from '../resource/partial-metadata';
import type { ObjectList, ResourceStorage } from '../storage/rest';
import { serveWatch } from '../watch/watch-stream';
import { readBody } from './body';
import { checkUnknownFields, fieldValidationOf } from './field-validation';
import { parseListQuery } from './list-query';
import type { ResponseShape } from './negotiate';
import { patchTypeOf, readPatch } from './patch-request';
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

function sendList(c: HandlerContext, list: ObjectList): void {
  const { shape } = c;
  if (shape.kind === 'table') {
    const include = includeObjectOf(c.url.searchParams.get('includeObject'));
    sendJson(
      c.res,
      200,
      c.storage.convertToTable(list.items, {
        resourceVersion: list.metadata.resourceVersion,
        ...(list.metadata.continue ? { continue: list.metadata.continue } : {}),
        include,
        version: shape.version,
      }),
    );
  } else if (shape.kind === 'metadata') {
    sendJson(c.res, 200, {
      kind: 'PartialObjectMetadataList',
      apiVersion: `meta.k8s.io/${shape.version}`,
      metadata: list.metadata,
      items: list.items.map((s) => metadataOnly(s, shape.version)),
    });
  } else {
    sendJson(c.res, 200, list);
  }
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
        bookmarkIntervalMs: c.bookmarkIntervalMs,
      });
    return sendList(c, storage.list(q));
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
    const created = await storage.create(info.namespace, body, { dryRun: dryRunParam(c.url) });
    if (warnings.length > 0) c.res.setHeader('Warning', warnings);
    sendJson(c.res, 201, created);
    return;
  }
  if (method === 'PATCH' && name !== '') {
    const dryRun = dryRunParam(c.url);
    const type = patchTypeOf(req.headers['content-type']);
    const patch = await readPatch(req);
    return sendObject(c, 200, await storage.patch(info.namespace, name, { type, patch, dryRun }));
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

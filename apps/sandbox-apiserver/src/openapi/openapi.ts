import { createHash } from 'node:crypto';
import { SANDBOX_API_VERSION } from '@sandbox-scale/scale-core';
import { ACTIONS, isReadAction } from '../discovery';
import { dataPlanePaths } from './data-plane-openapi';
import { buildModels, MODEL_PREFIX } from './models';

const TITLE = 'sandbox-aggregated-apiserver';
const BASE = `/apis/${SANDBOX_API_VERSION}`;
export const V3_GV_PATH = `apis/${SANDBOX_API_VERSION}`;

const LIST_PARAMS = [
  'labelSelector',
  'fieldSelector',
  'resourceVersion',
  'resourceVersionMatch',
  'limit',
  'continue',
  'watch',
  'allowWatchBookmarks',
  'sendInitialEvents',
  'timeoutSeconds',
  'pretty',
];
const WRITE_PARAMS = ['dryRun', 'fieldManager', 'fieldValidation', 'pretty'];
const PATCH_PARAMS = [...WRITE_PARAMS, 'force'];
/** The patch types PATCH takes, as kube-apiserver lists them. */
const PATCH_BODY = {
  content: Object.fromEntries(
    [
      'application/apply-patch+yaml',
      'application/json-patch+json',
      'application/merge-patch+json',
      'application/strategic-merge-patch+json',
    ].map((t) => [t, { schema: { type: 'object' } }]),
  ),
};

type Op = Record<string, unknown>;

function param(name: string, inPath = false): Record<string, unknown> {
  const integer = name === 'limit' || name === 'timeoutSeconds';
  const bool = name === 'watch' || name === 'allowWatchBookmarks' || name === 'sendInitialEvents' || name === 'force';
  return {
    name,
    in: inPath ? 'path' : 'query',
    ...(inPath ? { required: true } : {}),
    schema: { type: integer ? 'integer' : bool ? 'boolean' : 'string', uniqueItems: true },
  };
}

function op(action: string, kind: string, ref: string, params: string[], code = '200'): Op {
  return {
    operationId: `${action}${kind}`,
    tags: ['agentsXK8sIo_v1beta1'],
    parameters: params.map((p) => param(p)),
    responses: {
      [code]: { description: 'OK', content: { 'application/json': { schema: { $ref: `#/components/schemas/${MODEL_PREFIX}${ref}` } } } },
    },
    'x-kubernetes-action': action,
    'x-kubernetes-group-version-kind': { group: 'agents.x-k8s.io', version: 'v1beta1', kind },
  };
}

/** The options body each snapshot subresource reads (the others take an empty body). */
const ACTION_OPTIONS: Record<string, string> = {
  snapshots: 'SandboxSnapshotsOptions',
  deletesnapshot: 'SandboxDeleteSnapshotOptions',
  claimsnapshot: 'SandboxClaimSnapshotOptions',
};

const nsParam = param('namespace', true);
const nameParam = param('name', true);

/** The per-GV OpenAPI v3 document: paths with actions + self-contained models. */
export function openApiV3(): Record<string, unknown> {
  const paths: Record<string, unknown> = {
    // operation ids are unique per document (OpenAPI), hence the suffix kube gives the cluster-wide list
    [`${BASE}/sandboxes`]: { get: { ...op('list', 'Sandbox', 'SandboxList', LIST_PARAMS), operationId: 'listSandboxForAllNamespaces' } },
    [`${BASE}/namespaces/{namespace}/sandboxes`]: {
      parameters: [nsParam],
      get: op('list', 'Sandbox', 'SandboxList', LIST_PARAMS),
      post: {
        ...op('post', 'Sandbox', 'Sandbox', WRITE_PARAMS, '201'),
        requestBody: { content: { 'application/json': { schema: { $ref: `#/components/schemas/${MODEL_PREFIX}Sandbox` } } } },
      },
    },
    [`${BASE}/namespaces/{namespace}/sandboxes/{name}`]: {
      parameters: [nsParam, nameParam],
      get: op('get', 'Sandbox', 'Sandbox', ['pretty']),
      delete: op('delete', 'Sandbox', 'Sandbox', ['dryRun', 'gracePeriodSeconds', 'propagationPolicy', 'pretty']),
      // kubectl create/apply look for this operation's fieldValidation parameter before they send a body
      patch: { ...op('patch', 'Sandbox', 'Sandbox', PATCH_PARAMS), requestBody: PATCH_BODY },
    },
  };
  for (const a of ACTIONS) {
    const post = op('post', a.kind, a.kind, ['dryRun'], '201');
    // claimsnapshot answers a Sandbox; operation ids must stay unique beside create's `postSandbox`
    if (a.kind === 'Sandbox') post.operationId = `post${a.kind}${a.name[0]?.toUpperCase() ?? ''}${a.name.slice(1)}`;
    const options = ACTION_OPTIONS[a.name];
    if (options !== undefined)
      post.requestBody = { content: { 'application/json': { schema: { $ref: `#/components/schemas/${MODEL_PREFIX}${options}` } } } };
    // stats and snapshots are reads: a GET (verb get) answers what POST does, with 200 and no body
    const get = isReadAction(a.name) ? { get: op('get', a.kind, a.kind, []) } : {};
    paths[`${BASE}/namespaces/{namespace}/sandboxes/{name}/${a.name}`] = { parameters: [nsParam, nameParam], ...get, post };
  }
  Object.assign(
    paths,
    dataPlanePaths((kind) => `#/components/schemas/${MODEL_PREFIX}${kind}`, `${BASE}/namespaces/{namespace}/sandboxes/{name}`, [
      nsParam,
      nameParam,
    ]),
  );
  return {
    openapi: '3.0.0',
    info: { title: TITLE, version: 'v1beta1' },
    paths,
    components: { schemas: buildModels('#/components/schemas/', true) },
  };
}

/** Swagger 2.0: the same kinds with coarse models, merged by kube-apiserver. */
export function openApiV2(): Record<string, unknown> {
  return { swagger: '2.0', info: { title: TITLE, version: 'v1beta1' }, paths: {}, definitions: buildModels('#/definitions/', false) };
}

export function hashOf(doc: unknown): string {
  return createHash('sha512').update(JSON.stringify(doc)).digest('hex').toUpperCase();
}

/** `/openapi/v3`: only our group-version, with the hash kube-apiserver uses for caching. */
export function openApiV3Root(gvDoc: unknown): Record<string, unknown> {
  return { paths: { [V3_GV_PATH]: { serverRelativeURL: `/openapi/v3/${V3_GV_PATH}?hash=${hashOf(gvDoc)}` } } };
}

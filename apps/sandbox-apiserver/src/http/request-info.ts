import { decodeSegment } from '@sandbox-scale/kube-runtime';
import { API_VERSION, BadRequestError, RESOURCES, SANDBOX_GROUP } from '@sandbox-scale/scale-core';
import { dataPlaneVerb, isDataPlaneSubresource } from '../data-plane/subresources';
import { isReadAction } from '../discovery';
import { isWatchQuery } from './query-params';

/** What a request is about, in the terms authorization and storage speak. */
export type RequestInfo =
  | { readonly isResource: false; readonly path: string; readonly verb: string }
  | {
      readonly isResource: true;
      readonly path: string;
      readonly verb: string;
      readonly resource: string;
      readonly namespace: string;
      /** The name authorization checks: the path's, else a `metadata.name` field selector's. */
      readonly name: string;
      /** The name segment of the path, the object acted on; '' for a collection. */
      readonly pathName: string;
      readonly subresource: string;
    };

const PREFIX = `/apis/${SANDBOX_GROUP}/${API_VERSION}/`;

function verbOf(method: string, hasName: boolean, query: URLSearchParams): string {
  switch (method) {
    case 'GET':
    case 'HEAD':
      if (isWatchQuery(query)) return 'watch';
      return hasName ? 'get' : 'list';
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return hasName ? 'delete' : 'deletecollection';
    default:
      return method.toLowerCase();
  }
}

/** The name a `metadata.name=x` field selector pins, which SAR uses as the object name. */
function selectedName(query: URLSearchParams): string {
  const m = /(?:^|,)metadata\.name==?([^,]*)/.exec(query.get('fieldSelector') ?? '');
  return m?.[1] ?? '';
}

/** A path segment that is not valid percent-encoding: 400, as kube-apiserver answers it. */
function decoded(segment: string): string {
  const d = decodeSegment(segment);
  if (d === undefined) throw new BadRequestError(`invalid percent-encoding in path segment ${JSON.stringify(segment)}`);
  return d;
}

/**
 * Parses `/apis/agents.x-k8s.io/v1beta1/[namespaces/{ns}/]{resource}[/{name}[/{sub}]]`. Every
 * handler acts on the name parsed here, the one authorization was asked about.
 */
export function requestInfoOf(method: string, url: URL): RequestInfo {
  const path = url.pathname;
  if (!path.startsWith(PREFIX)) return { isResource: false, path, verb: method.toLowerCase() };
  let parts = path
    .slice(PREFIX.length)
    .split('/')
    .filter((p) => p !== '')
    .map(decoded);
  let namespace = '';
  if (parts[0] === 'namespaces' && parts.length >= 3) {
    namespace = parts[1] ?? '';
    parts = parts.slice(2);
  }
  const [resource = '', name = '', subresource = '', ...extra] = parts;
  if (resource === '' || extra.length > 0) return { isResource: false, path, verb: method.toLowerCase() };
  // a data-plane subresource is authorized by what it does to the guest, not by its method alone:
  // a port-forward's GET upgrade and a file's PUT are `create`, and no `?watch` makes a read a watch
  // a read subresource (stats, snapshots) is one object's read: `get` as kube-apiserver in front
  // names it, whatever the query says (no `?watch` makes it a watch)
  const verb =
    (name !== '' && isDataPlaneSubresource(subresource) ? dataPlaneVerb(subresource, method) : undefined) ??
    (name !== '' && isReadAction(subresource) && (method === 'GET' || method === 'HEAD') ? 'get' : undefined) ??
    verbOf(method, name !== '', url.searchParams);
  const effectiveName = name !== '' ? name : verb === 'list' || verb === 'watch' ? selectedName(url.searchParams) : '';
  return { isResource: true, path, verb, resource, namespace, name: effectiveName, pathName: name, subresource };
}

export const SANDBOXES = RESOURCES.sandbox.plural;

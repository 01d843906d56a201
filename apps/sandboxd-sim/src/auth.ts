import { timingSafeEqual } from 'node:crypto';
import { ApiError, unknownSandbox } from './api-error';
import type { Tenant } from './config';
import type { Sandbox } from './sandbox';

/** Who is calling, as resolved from the bearer token. */
export type Caller = { readonly kind: 'root' } | { readonly kind: 'open' } | { readonly kind: 'tenant'; readonly tenant: Tenant };

/** What auth needs to know about the node. */
export interface AuthNode {
  readonly rootToken: string;
  tenantByToken(token: string): Tenant | undefined;
  readonly open: boolean;
  findSandbox(id: string): Sandbox | undefined;
}

export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** `Bearer <token>` → token; absent or empty → undefined. */
export function bearerOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const m = /^bearer\s+(.*)$/i.exec(header.trim());
  const token = m?.[1]?.trim() ?? '';
  return token === '' ? undefined : token;
}

function isRoot(node: AuthNode, bearer: string | undefined): boolean {
  return node.rootToken !== '' && bearer !== undefined && safeEqual(bearer, node.rootToken);
}

/** Node-token endpoints: root or tenant; anything else is 401. An open node lets anyone in. */
export function nodeCaller(node: AuthNode, bearer: string | undefined): Caller {
  if (node.open) return { kind: 'open' };
  if (isRoot(node, bearer)) return { kind: 'root' };
  const tenant = bearer === undefined ? undefined : node.tenantByToken(bearer);
  if (tenant) return { kind: 'tenant', tenant };
  throw new ApiError(401, 'invalid api token');
}

/** Root-only endpoints: a valid tenant is authenticated but not authorized (403). */
export function rootCaller(node: AuthNode, bearer: string | undefined): Caller {
  const caller = nodeCaller(node, bearer);
  if (caller.kind === 'tenant') throw new ApiError(403, 'operator token required');
  return caller;
}

/**
 * Sandbox-scoped verbs: the root token acts by id (operator path); any other token must be
 * the sandbox's own. Wrong token and unknown id read the same (404), so ids cannot be probed.
 */
export function sandboxByBearer(node: AuthNode, bearer: string | undefined, id: string): Sandbox {
  if (bearer === undefined) throw new ApiError(401, 'missing bearer token');
  const sb = node.findSandbox(id);
  if (sb === undefined) throw unknownSandbox();
  if (isRoot(node, bearer) || safeEqual(bearer, sb.token)) return sb;
  throw unknownSandbox();
}

/**
 * Creating verbs on an existing sandbox (fork, promote, checkpoint): the header was the node
 * token; the body carries the sandbox token. Root with an empty body token acts by id.
 */
export function sandboxByBodyToken(node: AuthNode, caller: Caller, bodyToken: string, id: string): Sandbox {
  const sb = node.findSandbox(id);
  if (sb === undefined) throw unknownSandbox();
  if (bodyToken === '' ? caller.kind === 'root' : safeEqual(bodyToken, sb.token)) return sb;
  throw unknownSandbox();
}

export function tenantOf(caller: Caller): string | undefined {
  return caller.kind === 'tenant' ? caller.tenant.name : undefined;
}

/** Root and open callers see every row; a tenant only what it created. */
export function visibleTo(caller: Caller, owner: string | undefined): boolean {
  return caller.kind !== 'tenant' || caller.tenant.name === owner;
}

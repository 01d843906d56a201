import type { IncomingMessage } from 'node:http';
import type { DelegatedAuth, UserInfo } from '@sandbox-scale/kube-runtime';
import { StatusError } from '@sandbox-scale/scale-core';

/** Set by kube-apiserver on a ServiceAccount token bound to a pod: the node that pod runs on. */
export const NODE_NAME_EXTRA = 'authentication.kubernetes.io/node-name';

/** The node a caller's token is bound to; undefined unless exactly one node is named. */
export function nodeOfCaller(user: UserInfo): string | undefined {
  const nodes = user.extra[NODE_NAME_EXTRA] ?? [];
  return nodes.length === 1 && nodes[0] !== '' ? nodes[0] : undefined;
}

export type NoticeDecision = { readonly allowed: true } | { readonly allowed: false; readonly reason: string };

/**
 * Whether `user` may tell of `node` (pure). Only the chart's publisher ServiceAccount, and only
 * for the node its pod runs on, as kube-apiserver put it in the token: nothing the caller sends
 * names its node. No node in the token (an unbound token, a pre-1.30 server) is a refusal.
 */
export function decideNotice(user: UserInfo, publisher: string, node: string): NoticeDecision {
  if (publisher === '' || user.username !== publisher)
    return { allowed: false, reason: `User "${user.username}" is not the inventory-publisher ServiceAccount` };
  const own = nodeOfCaller(user);
  if (own === undefined) return { allowed: false, reason: 'the token is not bound to a pod on a node' };
  if (own !== node) return { allowed: false, reason: `a publisher on node "${own}" cannot tell of node "${node}"` };
  return { allowed: true };
}

/**
 * The caller of the notice endpoint, by TokenReview through the server's one delegated
 * authenticator; Unauthorized without a valid bearer token, Forbidden when it is not the
 * publisher ServiceAccount on some node. The node itself is checked against the body later.
 */
export async function authenticatePublisher(
  req: IncomingMessage,
  auth: Pick<DelegatedAuth, 'authenticateToken'>,
  publisher: string,
): Promise<UserInfo> {
  const header = req.headers.authorization ?? '';
  if (!header.startsWith('Bearer ')) throw new StatusError('Unauthorized', 'Unauthorized');
  const user = await auth.authenticateToken(header.slice('Bearer '.length));
  if (user === undefined) throw new StatusError('Unauthorized', 'Unauthorized');
  const own = nodeOfCaller(user);
  const d = decideNotice(user, publisher, own ?? '');
  if (!d.allowed) throw new StatusError('Forbidden', `forbidden: ${d.reason}`);
  return user;
}

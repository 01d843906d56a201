import type { IncomingMessage, ServerResponse } from 'node:http';
import { readRequestBody, sendJson, sendKubeStatus } from '@sandbox-scale/kube-runtime';
import { EXTENSIONS_GROUP, RESOURCES, StatusError, statusForError, type PoolKey } from '@sandbox-scale/scale-core';
import type { InflightLimits, Logger } from '@sandbox-scale/kube-runtime';
import type { Assignment, ClaimTarget } from '../gateway/assignment';
import { namespaceNotEnabledMessage, type SecretAccessDecision } from '../record/secret-access';
import type { Authorizer } from './review-client';
import { parseFastClaimRequest } from './fast-path-request';
import type { AnswersInFlight } from './answers-in-flight';

export interface ClaimHandlerDeps {
  authorizer: Authorizer;
  /** warmPool -> pool key, or a StatusError (the pool or its template is unknown). */
  resolvePool: (namespace: string, warmPool: string) => PoolKey;
  /** Reserves the claim name (false: a claim of it exists or is being delivered); released when nothing is delivered. */
  names: { take(target: ClaimTarget): boolean; release(target: ClaimTarget): void };
  /** The per-namespace cap on live fast-path claims: throws 429 over it, before any VM is claimed. */
  cap?: { admit(target: ClaimTarget): void; release(target: ClaimTarget): void };
  /** Whether the claim's token Secret may be written in the namespace; refused before any VM is claimed. */
  secretAccess?: (namespace: string) => Promise<SecretAccessDecision>;
  /** Delivers and queues the async record (the gateway's fast path); `requestedBy` is written on the record. */
  deliver: (target: ClaimTarget & { key: PoolKey; ttlSeconds: number; warmPool: string; requestedBy: string }) => Promise<Assignment>;
  log: Logger;
  /** Caps the claims one identity has in flight at once (429 past it). */
  inflight?: InflightLimits;
  /** Told of every answer from its start to its end, so the async records yield to answers. */
  answers?: AnswersInFlight;
  onResponse?: (code: number) => void;
}

const MAX_BODY_BYTES = 64 * 1024;

/** `POST /v1/claims`: decode, authenticate, authorize, call the gateway, encode. No claim logic here. */
export async function handleClaim(req: IncomingMessage, res: ServerResponse, d: ClaimHandlerDeps): Promise<void> {
  // 'close' follows the last byte written (or the client going away): the answer is over
  if (d.answers) res.once('close', d.answers.begin());
  try {
    if (req.method !== 'POST' || req.url?.split('?')[0] !== '/v1/claims')
      throw new StatusError('NotFound', `no route ${req.method} ${req.url}`);
    const token = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1]?.trim();
    const who = token ? await d.authorizer.authenticate(token) : undefined;
    if (!who) throw new StatusError('Unauthorized', 'Unauthorized: a valid bearer token is required');
    if (d.inflight) res.once('close', d.inflight.acquire(who.username, false));
    const body = parseFastClaimRequest(await readRequestBody(req, { maxBytes: MAX_BODY_BYTES }));
    const target = { namespace: body.namespace, name: body.name };
    const review = await d.authorizer.mayCreateClaim(who, body.namespace);
    if (!review.allowed) {
      throw new StatusError(
        'Forbidden',
        `${RESOURCES.sandboxClaim.plural}.${EXTENSIONS_GROUP} "${body.name}" is forbidden: User "${who.username}" cannot create resource "${RESOURCES.sandboxClaim.plural}" in API group "${EXTENSIONS_GROUP}" in the namespace "${body.namespace}"${review.reason ? `: ${review.reason}` : ''}`,
        { name: body.name, group: EXTENSIONS_GROUP, kind: RESOURCES.sandboxClaim.plural },
      );
    }
    if (!d.names.take(target))
      throw new StatusError('AlreadyExists', `${RESOURCES.sandboxClaim.plural}.${EXTENSIONS_GROUP} "${body.name}" already exists`);
    let a: Assignment;
    try {
      const key = d.resolvePool(body.namespace, body.warmPool);
      const access = await d.secretAccess?.(body.namespace);
      if (access && !access.allowed) {
        throw new StatusError('Forbidden', namespaceNotEnabledMessage(body.namespace, access), {
          name: body.name,
          group: EXTENSIONS_GROUP,
          kind: RESOURCES.sandboxClaim.plural,
          causes: [
            {
              reason: 'NamespaceNotEnabled',
              field: 'namespace',
              message: `claim Secrets may not be written in namespace "${body.namespace}"`,
            },
          ],
        });
      }
      d.cap?.admit(target);
      try {
        a = await d.deliver({ ...target, key, ttlSeconds: body.ttlSeconds ?? 0, warmPool: body.warmPool, requestedBy: who.username });
      } catch (err) {
        d.cap?.release(target);
        throw err;
      }
    } catch (err) {
      d.names.release(target);
      throw err;
    }
    send(
      res,
      200,
      {
        kind: 'Assignment',
        apiVersion: 'v1',
        namespace: target.namespace,
        name: target.name,
        claimId: a.claimId,
        node: a.node,
        address: a.address,
        token: a.token,
        ...(a.deadline ? { deadline: a.deadline } : {}),
      },
      d,
    );
    // Debug, not info: a line per claim is a synchronous stdout write and a serialization on
    // the claim path (a sixth of its CPU in a burst), and the claim's record says the same (its
    // name, the sandbox and node in its Bound status, the caller in the requested-by annotation).
    // Logged once the answer is on its way: the caller does not wait on it.
    d.log.debug(
      { namespace: target.namespace, name: target.name, node: a.node, sandboxId: a.claimId, user: who.username },
      'fast-path claim delivered',
    );
  } catch (err) {
    const status = statusForError(err);
    if (status.code >= 500) d.log.error({ err }, 'fast-path claim failed');
    d.onResponse?.(status.code);
    sendKubeStatus(res, status);
  }
}

function send(res: ServerResponse, code: number, body: unknown, d: ClaimHandlerDeps): void {
  d.onResponse?.(code);
  sendJson(res, code, body);
}

import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  readRequestBody,
  sendJson,
  sendKubeStatus,
  type InflightLimits,
  type Logger,
  type PeerIdentity,
} from '@sandbox-scale/kube-runtime';
import { BadRequestError, EXTENSIONS_GROUP, issuesText, RESOURCES, StatusError, statusForError } from '@sandbox-scale/scale-core';
import type { Assignment } from '../gateway/assignment';
import type { Authorizer } from './review-client';
import { parseFastClaimRequest } from './fast-path-request';
import type { AnswersInFlight } from './answers-in-flight';
import type { FastPathClaims } from './fast-path-claims';
import { FAST_PATH_PEER_PATH, FastPathPeerCallSchema } from './fast-path-peers';

export interface ClaimHandlerDeps {
  authorizer: Authorizer;
  /** Takes names, counts the cap and delivers, here or on the replica serving the namespace. */
  claims: FastPathClaims;
  /** Who may call the peer endpoint (the replicas' own ServiceAccount); undefined: no peers, the path is not served. */
  peerIdentity?: PeerIdentity;
  log: Logger;
  /** Caps the claims one identity has in flight at once (429 past it). */
  inflight?: InflightLimits;
  /** Told of every answer from its start to its end, so the async records yield to answers. */
  answers?: AnswersInFlight;
  onResponse?: (code: number) => void;
}

const MAX_BODY_BYTES = 64 * 1024;

/** `POST /v1/claims` and the peers' calls: decode, authenticate, authorize, call FastPathClaims, encode. No claim logic here. */
export async function handleClaim(req: IncomingMessage, res: ServerResponse, d: ClaimHandlerDeps): Promise<void> {
  // 'close' follows the last byte written (or the client going away): the answer is over
  if (d.answers) res.once('close', d.answers.begin());
  try {
    const path = req.url?.split('?')[0];
    if (req.method === 'POST' && path === FAST_PATH_PEER_PATH && d.peerIdentity !== undefined) return await servePeer(req, res, d);
    if (req.method !== 'POST' || path !== '/v1/claims') throw new StatusError('NotFound', `no route ${req.method} ${req.url}`);
    const token = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1]?.trim();
    const who = token ? await d.authorizer.authenticate(token) : undefined;
    if (!who) throw new StatusError('Unauthorized', 'Unauthorized: a valid bearer token is required');
    if (d.inflight) res.once('close', d.inflight.acquire(who.username, false));
    const body = parseFastClaimRequest(await readRequestBody(req, { maxBytes: MAX_BODY_BYTES }));
    const review = await d.authorizer.mayCreateClaim(who, body.namespace);
    if (!review.allowed) {
      throw new StatusError(
        'Forbidden',
        `${RESOURCES.sandboxClaim.plural}.${EXTENSIONS_GROUP} "${body.name}" is forbidden: User "${who.username}" cannot create resource "${RESOURCES.sandboxClaim.plural}" in API group "${EXTENSIONS_GROUP}" in the namespace "${body.namespace}"${review.reason ? `: ${review.reason}` : ''}`,
        { name: body.name, group: EXTENSIONS_GROUP, kind: RESOURCES.sandboxClaim.plural },
      );
    }
    const a = await d.claims.claim(who.username, body);
    sendAssignment(res, body, a, d);
    // Debug, not info: a line per claim is a synchronous stdout write and a serialization on
    // the claim path (a sixth of its CPU in a burst), and the claim's record says the same (its
    // name, the sandbox and node in its Bound status, the caller in the requested-by annotation).
    // Logged once the answer is on its way: the caller does not wait on it.
    d.log.debug(
      { namespace: body.namespace, name: body.name, node: a.node, sandboxId: a.claimId, user: who.username },
      'fast-path claim delivered',
    );
  } catch (err) {
    const status = statusForError(err);
    if (status.code >= 500) d.log.error({ err }, 'fast-path claim failed');
    d.onResponse?.(status.code);
    sendKubeStatus(res, status);
  }
}

/**
 * A call of another replica: its own ServiceAccount, checked by TokenReview, never a header.
 * Not counted as a fast-path request (the replica that was asked counts it once).
 */
async function servePeer(req: IncomingMessage, res: ServerResponse, d: ClaimHandlerDeps): Promise<void> {
  try {
    await d.peerIdentity?.check(req);
    const parsed = FastPathPeerCallSchema.safeParse(await readRequestBody(req, { maxBytes: MAX_BODY_BYTES }));
    if (!parsed.success) throw new BadRequestError(`not a fast-path peer call: ${issuesText(parsed.error)}`);
    const call = parsed.data;
    if (call.op === 'claim') {
      sendJson(res, 200, { object: assignmentFields(await d.claims.serve(call.username, call.request)) });
      return;
    }
    if (call.op === 'reserve') d.claims.reserve(call);
    else d.claims.unreserve(call);
    sendJson(res, 200, { object: {} });
  } catch (err) {
    const status = statusForError(err);
    if (status.code >= 500) d.log.error({ err }, 'fast-path peer call failed');
    sendKubeStatus(res, status);
  }
}

/** The node's hand-over as the caller and a forwarding replica read it: these fields, nothing the gateway adds. */
function assignmentFields(a: Assignment): Assignment {
  return { claimId: a.claimId, node: a.node, address: a.address, token: a.token, ...(a.deadline ? { deadline: a.deadline } : {}) };
}

function sendAssignment(res: ServerResponse, target: { namespace: string; name: string }, a: Assignment, d: ClaimHandlerDeps): void {
  send(res, 200, { kind: 'Assignment', apiVersion: 'v1', namespace: target.namespace, name: target.name, ...assignmentFields(a) }, d);
}

function send(res: ServerResponse, code: number, body: unknown, d: ClaimHandlerDeps): void {
  d.onResponse?.(code);
  sendJson(res, code, body);
}

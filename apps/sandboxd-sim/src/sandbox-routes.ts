import {
  CheckpointBodySchema,
  CheckpointClaimBodySchema,
  ClaimBodySchema,
  ForkBodySchema,
  PromoteBodySchema,
  RenewBodySchema,
  type WireRedirectReply,
} from '@sandbox-scale/sandboxd-client';
import { nodeCaller, rootCaller, sandboxByBearer } from './auth';
import { claim, claimCheckpoint, fork, type ClaimOutcome } from './claim-ops';
import { jsonReply, noContent, type Reply } from './http-io';
import { checkpoint, hibernate, promote, release, renew, wake } from './lifecycle-ops';
import type { NodeState } from './node-state';
import type { Route, RouteCtx } from './route';
import { checkpointWire, claimReply, nodeTime, sandboxDetail, statsReply } from './views';
import { wireKey } from './wire-key';

/** Routes of claims and per-sandbox verbs: authenticate, decode, call an op, encode. */

function outcomeReply(node: NodeState, o: ClaimOutcome): Reply {
  if (o.kind === 'claim') return jsonReply(claimReply(node, o.sandbox));
  const body: WireRedirectReply = { redirect: o.to, ...(o.requirePromoted ? { require_promoted: true } : {}) };
  return jsonReply(body);
}

const sandboxOf = (c: RouteCtx) => sandboxByBearer(c.node, c.bearer, c.id);

export const sandboxRoutes: Route[] = [
  {
    method: 'POST',
    path: '/v1/claim',
    verb: 'claim',
    handle: async (c) => {
      const caller = nodeCaller(c.node, c.bearer);
      return outcomeReply(c.node, await claim(c.node, caller, c.body(ClaimBodySchema)));
    },
  },
  {
    method: 'POST',
    path: '/v1/sandboxes/:id/release',
    verb: 'release',
    handle: async (c) => {
      await release(c.node, sandboxOf(c));
      return noContent();
    },
  },
  {
    method: 'POST',
    path: '/v1/sandboxes/:id/hibernate',
    verb: 'hibernate',
    handle: async (c) => {
      await hibernate(c.node, sandboxOf(c));
      return noContent();
    },
  },
  {
    method: 'POST',
    path: '/v1/sandboxes/:id/wake',
    verb: 'wake',
    handle: async (c) => {
      await wake(c.node, sandboxOf(c));
      return noContent();
    },
  },
  {
    method: 'POST',
    path: '/v1/sandboxes/:id/renew',
    verb: 'renew',
    handle: (c) => {
      const sb = sandboxOf(c);
      const body = c.body(RenewBodySchema, true);
      return jsonReply({ deadline: nodeTime(c.node, renew(c.node, sb, body.ttl_seconds)) });
    },
  },
  {
    method: 'POST',
    path: '/v1/sandboxes/:id/fork',
    verb: 'fork',
    handle: async (c) => {
      const caller = nodeCaller(c.node, c.bearer);
      const children = await fork(c.node, caller, c.id, c.body(ForkBodySchema));
      return jsonReply({ children: children.map((sb) => claimReply(c.node, sb)) });
    },
  },
  {
    method: 'POST',
    path: '/v1/sandboxes/:id/promote',
    verb: 'promote',
    handle: async (c) => {
      const caller = nodeCaller(c.node, c.bearer);
      const rec = await promote(c.node, caller, c.id, c.body(PromoteBodySchema));
      return jsonReply({ key: wireKey(rec.key), content_digest: rec.digest });
    },
  },
  {
    method: 'POST',
    path: '/v1/sandboxes/:id/checkpoint',
    verb: 'checkpoint',
    handle: async (c) => {
      const caller = nodeCaller(c.node, c.bearer);
      const rec = await checkpoint(c.node, caller, c.id, c.body(CheckpointBodySchema));
      return jsonReply({ checkpoint: checkpointWire(c.node, rec) });
    },
  },
  {
    method: 'POST',
    path: '/v1/checkpoints/:id/claim',
    verb: 'checkpoint_claim',
    handle: async (c) => {
      const caller = nodeCaller(c.node, c.bearer);
      return outcomeReply(c.node, await claimCheckpoint(c.node, caller, c.id, c.body(CheckpointClaimBodySchema)));
    },
  },
  {
    method: 'GET',
    path: '/v1/sandboxes/:id',
    verb: 'sandbox',
    handle: (c) => {
      rootCaller(c.node, c.bearer);
      const sb = c.node.findSandbox(c.id);
      if (sb === undefined) return jsonReply({ error: 'unknown sandbox' }, 404);
      return jsonReply(sandboxDetail(c.node, sb));
    },
  },
  {
    method: 'GET',
    path: '/v1/sandboxes/:id/stats',
    verb: 'stats',
    handle: (c) => {
      rootCaller(c.node, c.bearer);
      const sb = c.node.findSandbox(c.id);
      if (sb === undefined) return jsonReply({ error: 'unknown sandbox' }, 404);
      return jsonReply(statsReply(c.node, sb));
    },
  },
  {
    method: 'GET',
    path: '/v1/sandboxes/:id/owner',
    verb: 'owner',
    handle: (c) => {
      sandboxOf(c);
      return jsonReply({ owner_addr: c.node.advertiseAddr });
    },
  },
];

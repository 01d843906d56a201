import { ApiError } from '../api-error';
import { sandboxByBearer } from '../auth';
import { wake } from '../lifecycle-ops';
import type { NodeState } from '../node-state';
import { RUNNING, type Sandbox } from '../sandbox';
import type { DataPlane } from './data-plane';
import type { GuestOwner } from './guest-ids';

export const DATA_PLANE_DISABLED = 'data plane disabled on this node (--data-plane=off)';

export interface SandboxAccess {
  sb: Sandbox;
  dp: DataPlane;
  /** The root's real path (created on first use). */
  root: string;
  /** The uid and gid its commands run as and the files written for it belong to; undefined = the simulator's own. */
  owner: GuestOwner | undefined;
  /** Restarts the sandbox's idle clock (each RPC and request over a relay is a use). */
  touch: () => void;
}

/** 501 when the node runs without a data plane, before anything else is looked at. */
export function dataPlaneOf(node: NodeState): DataPlane {
  if (node.dataPlane === undefined) throw new ApiError(501, DATA_PLANE_DISABLED);
  return node.dataPlane;
}

/**
 * What every data-plane call does first: the sandbox by its token (the root token acts by id),
 * 409 for a failed guest, a transparent wake of a hibernated or archived one, and the idle clock
 * restarted, since this is a use of the sandbox.
 */
export async function accessSandbox(node: NodeState, bearer: string | undefined, id: string): Promise<SandboxAccess> {
  const dp = dataPlaneOf(node);
  const sb = sandboxByBearer(node, bearer, id);
  if (node.faults.isFailed(sb.id)) throw new ApiError(409, 'sandbox failed');
  if (sb.state !== RUNNING) await wake(node, sb);
  const touch = (): void => {
    sb.idleSince = node.now();
  };
  touch();
  const root = await dp.roots.ensure(sb.id);
  return { sb, dp, root, owner: dp.roots.ownerOf(sb.id), touch };
}

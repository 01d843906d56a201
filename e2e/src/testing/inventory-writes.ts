import type { KubeConfig } from '@kubernetes/client-node';
import { EXTENSIONS_API_VERSION } from '@sandbox-scale/scale-core';
import { sendAs, type WriteAnswer } from './kube-request';

export type { WriteAnswer } from './kube-request';

export type InventoryWrite =
  /** A server-side apply of `body` (creates the object when missing), as the publisher writes. */
  | { op: 'apply'; name: string; body: Record<string, unknown> }
  /** A JSON merge patch of an existing object. */
  | { op: 'merge'; name: string; patch: Record<string, unknown> }
  | { op: 'delete'; name: string };

const PATH = `/apis/${EXTENSIONS_API_VERSION}/nodeinventories`;

/** The body of a NodeInventory `name` that says it is node `node`'s (a part when `part` is given). */
export function inventoryBody(name: string, node: string, part?: number): Record<string, unknown> {
  return {
    apiVersion: EXTENSIONS_API_VERSION,
    kind: 'NodeInventory',
    metadata: { name },
    node,
    ...(part === undefined ? {} : { part }),
  };
}

/** Sends one NodeInventory write with the credentials of `kc` (a token kubeconfig). */
export async function writeInventory(kc: KubeConfig, w: InventoryWrite, fieldManager = 'sandbox-scale-test'): Promise<WriteAnswer> {
  const path = `${PATH}/${encodeURIComponent(w.name)}`;
  if (w.op === 'apply')
    return sendAs(kc, {
      method: 'PATCH',
      path: `${path}?fieldManager=${encodeURIComponent(fieldManager)}&force=true`,
      contentType: 'application/apply-patch+yaml',
      body: JSON.stringify(w.body),
    });
  if (w.op === 'merge')
    return sendAs(kc, { method: 'PATCH', path, contentType: 'application/merge-patch+json', body: JSON.stringify(w.patch) });
  return sendAs(kc, { method: 'DELETE', path });
}

import { formatRfc3339Seconds, synthesizeSandbox, type ServedSandbox } from '@sandbox-scale/scale-core';
import type { SandboxStorage } from './sandbox-storage';

export interface ClaimedSandbox {
  readonly node: string;
  readonly namespace: string;
  readonly name: string;
  readonly id: string;
  readonly addr: string;
  readonly deadline?: Date | null;
  /** The claim_ref the node recorded (`<kind>:<uid>:<ns>/<name>`). */
  readonly claimRef: string;
}

/**
 * Lists a sandbox a verb just claimed (fork child, snapshot claim) at once, under the name its
 * claim_ref gives it on the node: the claim-time index answers get/delete/verbs for it and the
 * cache shows it in lists until the node's next NodeInventory carries it (read-after-create).
 */
export function listClaimed(storage: SandboxStorage, c: ClaimedSandbox, now = new Date()): ServedSandbox {
  const claimedAt = formatRfc3339Seconds(now);
  const deadline = c.deadline && c.deadline.getTime() > 0 ? formatRfc3339Seconds(c.deadline) : '';
  const key = `${c.namespace}/${c.name}`;
  const entry = {
    name: key,
    id: c.id,
    phase: 'Running',
    claimRef: c.claimRef,
    ...(c.addr ? { addr: c.addr } : {}),
    ...(deadline ? { deadline } : {}),
    claimedAt,
  };
  storage.index.put({ namespace: c.namespace, name: c.name, node: c.node, claimId: c.id });
  const row = storage.cache.addCreated(
    c.node,
    entry,
    synthesizeSandbox(c.node, entry, { resourceVersion: '0', fallbackCreationTimestamp: claimedAt }),
  );
  return storage.cache.objectOf(row);
}

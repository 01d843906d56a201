import type { NodeState } from './node-state';
import { ARCHIVED, HIBERNATED, NO_DEADLINE, RUNNING, type Sandbox } from './sandbox';

/**
 * The node's 5 s sweep (one pass over the table instead of a timer per VM): idle hibernate,
 * archive after a hibernation period, reap at the deadline (a hibernated claim with
 * archiving on is archived instead), purge archives at their own deadline.
 */
export function sweep(node: NodeState): void {
  const now = node.now();
  for (const sb of node.sandboxes.values()) step(node, sb, now);
}

function step(node: NodeState, sb: Sandbox, now: number): void {
  if (sb.state === ARCHIVED) {
    if (sb.deadline !== NO_DEADLINE && now >= sb.deadline) {
      node.remove(sb);
      node.metrics.archiveDeletes++;
    }
    return;
  }
  const lc = node.lifecycleOf(sb.key);
  if (now >= sb.deadline) {
    if (sb.state === HIBERNATED && lc.archiveAfterS > 0) archive(node, sb, now);
    else {
      node.remove(sb);
      node.metrics.reaps++;
    }
    return;
  }
  // an open relay, agent connection or running exec is use: the idle clock starts over
  if (node.dataPlane?.isHeld(sb.id)) sb.idleSince = now;
  if (sb.state === RUNNING && lc.idleHibernateS > 0 && sb.key.net !== 'egress' && now - sb.idleSince >= lc.idleHibernateS * 1000) {
    node.setState(sb, HIBERNATED);
    node.metrics.hibernates++;
  } else if (sb.state === HIBERNATED && lc.archiveAfterS > 0 && now - sb.hibernatedAt >= lc.archiveAfterS * 1000) {
    archive(node, sb, now);
  }
}

/** The VM is dropped; the claim lives on until archive_delete_after_seconds (0 = forever). */
export function archive(node: NodeState, sb: Sandbox, now: number): void {
  const keepS = node.lifecycleOf(sb.key).archiveDeleteAfterS;
  node.setState(sb, ARCHIVED);
  sb.deadline = keepS > 0 ? now + keepS * 1000 : NO_DEADLINE;
  node.metrics.archives++;
}

import { apiStatusOf } from '@sandbox-scale/kube-runtime';
import type { Assignment } from '../gateway/assignment';
import { SECRET_NAMESPACES_VALUE } from '../record/secret-access';
import type { FieldProblem } from './claim-lifecycle';

/** An RBAC refusal of a Secret write, as the API server words it (a quota refusal is a 403 too, worded otherwise). */
const RBAC_SECRET_REFUSAL = /cannot [a-z]+ resource "secrets"/;

/**
 * What a claim says when a node delivered its VM but the Bound record could not be written:
 * the API server's own words (a 403, an exceeded quota, a timeout...), that the VM is kept, and
 * for an RBAC refusal of the Secret the chart value that grants it. Never "no capacity": the
 * capacity was there and is held for this claim.
 */
export function recordFailure(err: unknown, a: Assignment, namespace: string): FieldProblem {
  const status = apiStatusOf(err);
  const why = status?.message ?? (err instanceof Error ? err.message : String(err));
  const code = status ? `${status.code}${status.reason ? ` ${status.reason}` : ''}: ` : '';
  const rbac = status?.code === 403 && RBAC_SECRET_REFUSAL.test(why);
  const hint = rbac
    ? `; claim-controller may not write Secrets in namespace "${namespace}": add it to the chart value ${SECRET_NAMESPACES_VALUE} (helm upgrade) or leave that list empty`
    : '';
  return {
    field: rbac ? 'metadata.namespace' : 'status.sandbox',
    message: `node ${a.node} delivered sandbox ${a.claimId}, but writing its Bound record failed (${code}${why})${hint}. The sandbox is kept for this claim and recorded once the write succeeds; no other sandbox is claimed`,
  };
}

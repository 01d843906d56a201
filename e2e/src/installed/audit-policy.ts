import { auditArgs, type AuditOptions } from '../control-plane/audit';
import { chartServiceAccountUsers } from '../testing/audit-log';
import { INSTALLED_NAMESPACE, INSTALLED_RELEASE } from './installed-system';
import { NODE_NAMESPACE } from './installed-values';

/**
 * What the installed run's audit log holds: SubjectAccessReviews with their bodies, and every
 * request of the chart's ServiceAccounts (rbac-audit, security-identity).
 */
export const INSTALLED_AUDIT: AuditOptions = {
  subjectAccessReviews: true,
  users: [...chartServiceAccountUsers(INSTALLED_NAMESPACE, INSTALLED_RELEASE, NODE_NAMESPACE).values()],
};

// `tsx e2e/src/installed/audit-policy.ts DIR`: writes DIR/audit-policy.yaml, the policy a cluster
// the installed run did not start (e2e/kind/run.sh's) is created with.
if (require.main === module) {
  const dir = process.argv[2];
  if (dir === undefined) {
    process.stderr.write('usage: tsx e2e/src/installed/audit-policy.ts DIR\n');
    process.exit(2);
  }
  auditArgs(dir, INSTALLED_AUDIT);
}

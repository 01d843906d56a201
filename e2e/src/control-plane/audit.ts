import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * kube-apiserver flags for an audit log of the SubjectAccessReviews it serves (level Request,
 * written before each request completes), in `dir`: what a suite reads to see which identity an
 * aggregated server asked about.
 */
export function sarAuditArgs(dir: string): { args: string[]; logPath: string } {
  const policy = join(dir, 'audit-policy.yaml');
  const logPath = join(dir, 'audit.log');
  writeFileSync(
    policy,
    JSON.stringify({
      apiVersion: 'audit.k8s.io/v1',
      kind: 'Policy',
      omitStages: ['RequestReceived'],
      rules: [{ level: 'Request', resources: [{ group: 'authorization.k8s.io', resources: ['subjectaccessreviews'] }] }, { level: 'None' }],
    }),
  );
  return { args: [`--audit-policy-file=${policy}`, `--audit-log-path=${logPath}`, '--audit-log-mode=blocking'], logPath };
}

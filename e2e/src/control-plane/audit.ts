import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface AuditOptions {
  /** The SubjectAccessReviews kube-apiserver serves, at level Request (their spec: who was asked about). */
  subjectAccessReviews?: boolean;
  /**
   * Users whose every request is logged at level Metadata (verb, resource, namespace, name and the
   * answer's code, no bodies): what a suite compares with the RBAC it granted them.
   */
  users?: string[];
}

/**
 * kube-apiserver flags for an audit log in `dir` (written before each request completes, so a
 * suite reading it after an answer finds it): the requests `opts` names, nothing else. Rules
 * match first to last, so a SubjectAccessReview a listed user sends is kept with its body.
 */
export function auditArgs(dir: string, opts: AuditOptions): { args: string[]; logPath: string } {
  const policy = join(dir, 'audit-policy.yaml');
  const logPath = join(dir, 'audit.log');
  const rules: Record<string, unknown>[] = [];
  if (opts.subjectAccessReviews)
    rules.push({ level: 'Request', resources: [{ group: 'authorization.k8s.io', resources: ['subjectaccessreviews'] }] });
  if (opts.users?.length) rules.push({ level: 'Metadata', users: opts.users });
  rules.push({ level: 'None' });
  writeFileSync(policy, JSON.stringify({ apiVersion: 'audit.k8s.io/v1', kind: 'Policy', omitStages: ['RequestReceived'], rules }));
  return { args: [`--audit-policy-file=${policy}`, `--audit-log-path=${logPath}`, '--audit-log-mode=blocking'], logPath };
}

/**
 * kube-apiserver flags for an audit log of the SubjectAccessReviews it serves (level Request),
 * in `dir`: what a suite reads to see which identity an aggregated server asked about.
 */
export function sarAuditArgs(dir: string): { args: string[]; logPath: string } {
  return auditArgs(dir, { subjectAccessReviews: true });
}

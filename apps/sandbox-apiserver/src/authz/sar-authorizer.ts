import type { AccessAttributes, Decision, DelegatedAuth } from '@sandbox-scale/kube-runtime';
import { API_VERSION, SANDBOX_GROUP } from '@sandbox-scale/scale-core';
import type { UserInfo } from '../authn/user-info';
import type { RequestInfo } from '../http/request-info';

export type { Decision };

/** What SubjectAccessReview is asked: resource attributes for sandboxes, non-resource ones for the rest. */
export function accessAttributesOf(info: RequestInfo): AccessAttributes {
  if (!info.isResource) return { nonResource: { path: info.path, verb: info.verb } };
  return {
    resource: {
      namespace: info.namespace,
      verb: info.verb,
      group: SANDBOX_GROUP,
      version: API_VERSION,
      resource: info.resource,
      subresource: info.subresource,
      name: info.name,
    },
  };
}

/**
 * Delegated authorization through the shared DelegatedAuth: cached allow
 * and deny, and a failed review refuses (503) instead of allowing.
 */
export class SarAuthorizer {
  constructor(private readonly auth: DelegatedAuth) {}

  authorize(user: UserInfo, info: RequestInfo, signal?: AbortSignal): Promise<Decision> {
    return this.auth.authorize(user, accessAttributesOf(info), signal);
  }
}

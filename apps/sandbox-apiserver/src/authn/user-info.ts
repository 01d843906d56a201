import type { UserInfo } from '@sandbox-scale/kube-runtime';

export type { UserInfo };

export const AUTHENTICATED_GROUP = 'system:authenticated';

/** Appends system:authenticated, as kube does (RBAC's system:discovery binding depends on it). */
export function withAuthenticatedGroup(u: UserInfo): UserInfo {
  return u.groups.includes(AUTHENTICATED_GROUP) ? u : { ...u, groups: [...u.groups, AUTHENTICATED_GROUP] };
}

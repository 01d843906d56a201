/** An authenticated caller, as SubjectAccessReview wants it. */
export interface UserInfo {
  readonly username: string;
  readonly uid?: string;
  readonly groups: readonly string[];
  readonly extra: Readonly<Record<string, readonly string[]>>;
}

export const AUTHENTICATED_GROUP = 'system:authenticated';

/** Appends system:authenticated, as kube does (RBAC's system:discovery binding depends on it). */
export function withAuthenticatedGroup(u: UserInfo): UserInfo {
  return u.groups.includes(AUTHENTICATED_GROUP) ? u : { ...u, groups: [...u.groups, AUTHENTICATED_GROUP] };
}

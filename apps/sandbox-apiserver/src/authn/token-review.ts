import type { KubeConfig } from '@kubernetes/client-node';
import { kubeRequest } from '@sandbox-scale/kube-runtime';
import { z } from 'zod';
import type { UserInfo } from './user-info';

const TokenReviewSchema = z.object({
  status: z
    .object({
      authenticated: z.boolean().optional(),
      user: z
        .object({
          username: z.string().optional(),
          uid: z.string().optional(),
          groups: z.array(z.string()).optional(),
          extra: z.record(z.string(), z.array(z.string())).optional(),
        })
        .optional(),
    })
    .optional(),
});

const CACHE_TTL_MS = 10_000;

/** Bearer tokens of direct callers, checked by TokenReview and cached ~10 s (k8s-api.md §4.4 step 3). */
export class TokenReviewer {
  readonly #cache = new Map<string, { user: UserInfo | undefined; expires: number }>();
  constructor(private readonly kc: KubeConfig) {}

  async review(token: string): Promise<UserInfo | undefined> {
    const now = Date.now();
    const hit = this.#cache.get(token);
    if (hit !== undefined && hit.expires > now) return hit.user;
    const raw = await kubeRequest(this.kc, {
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/tokenreviews',
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
      signal: AbortSignal.timeout(10_000),
    });
    const status = TokenReviewSchema.parse(raw).status;
    const u = status?.user;
    const user = status?.authenticated && u?.username ? { username: u.username, ...(u.uid ? { uid: u.uid } : {}), groups: u.groups ?? [], extra: u.extra ?? {} } : undefined;
    if (this.#cache.size > 10_000) this.#cache.clear();
    this.#cache.set(token, { user, expires: now + CACHE_TTL_MS });
    return user;
  }
}

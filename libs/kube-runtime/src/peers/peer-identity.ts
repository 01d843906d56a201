import type { IncomingMessage } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import { StatusError } from '@sandbox-scale/scale-core';
import type { DelegatedAuth } from '../auth/delegated-auth';
import { kubeAuthorization } from '../client/kube-transport';

/**
 * Who may call a peer endpoint: a bearer token that TokenReview says belongs to the very
 * identity this replica runs as (its ServiceAccount: the replicas share one). The end user was
 * authenticated and authorized by the replica that forwards; nothing here reads an identity
 * from a header a client could set. `auth` must review tokens for the API server's own
 * audience, which a ServiceAccount's own token is issued for.
 */
export class PeerIdentity {
  #self: Promise<string> | undefined;

  constructor(
    private readonly kc: KubeConfig,
    private readonly auth: DelegatedAuth,
    /** The replicas' name in a refusal (`sandbox-apiserver`). */
    private readonly role: string,
  ) {}

  /** This replica's own username, by a TokenReview of its own token (retried after a failure). */
  selfUsername(): Promise<string> {
    this.#self ??= (async () => {
      const header = await kubeAuthorization(this.kc);
      const user = header.startsWith('Bearer ') ? await this.auth.authenticateToken(header.slice('Bearer '.length)) : undefined;
      if (user === undefined || user.username === '')
        throw new StatusError('ServiceUnavailable', 'this replica cannot establish its own identity for peer calls', {
          retryAfterSeconds: 1,
        });
      return user.username;
    })();
    const p = this.#self;
    p.catch(() => {
      if (this.#self === p) this.#self = undefined;
    });
    return p;
  }

  /** The caller's username when it is a peer; throws Unauthorized/Forbidden otherwise. */
  async check(req: IncomingMessage): Promise<string> {
    const header = req.headers.authorization ?? '';
    if (!header.startsWith('Bearer ')) throw new StatusError('Unauthorized', 'Unauthorized');
    const user = await this.auth.authenticateToken(header.slice('Bearer '.length));
    if (user === undefined) throw new StatusError('Unauthorized', 'Unauthorized');
    if (user.username !== (await this.selfUsername()))
      throw new StatusError('Forbidden', `forbidden: User "${user.username}" is not a ${this.role} peer`);
    return user.username;
  }
}

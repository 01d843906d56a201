import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import { kubeAuthorization, sendJson, type DelegatedAuth, type Logger } from '@sandbox-scale/kube-runtime';
import { BadRequestError, StatusError } from '@sandbox-scale/scale-core';
import { readBody } from '../http/body';
import { PeerCallSchema } from './peer-protocol';
import type { LocalVerbs } from './sandbox-verbs';

/**
 * Who may call the peer endpoint: a bearer token that TokenReview says belongs to the very
 * identity this replica runs as (its ServiceAccount: the replicas share one). The end user was
 * authenticated and authorized by the replica that forwards; nothing here reads an identity
 * from a header a client could set, and kube-apiserver never proxies this path.
 */
export class PeerIdentity {
  #self: Promise<string> | undefined;

  constructor(
    private readonly kc: KubeConfig,
    private readonly auth: DelegatedAuth,
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
      throw new StatusError('Forbidden', `forbidden: User "${user.username}" is not a sandbox-apiserver peer`);
    return user.username;
  }
}

/** Serves POST PEER_PATH: runs a peer's call on this replica's storage, answers `{object}` or a Status. */
export async function servePeerCall(req: IncomingMessage, res: ServerResponse, local: LocalVerbs, log: Logger): Promise<void> {
  if (req.method !== 'POST') throw new StatusError('MethodNotAllowed', `${req.method ?? ''} is not supported on the peer endpoint`);
  const parsed = PeerCallSchema.safeParse(await readBody(req));
  if (!parsed.success)
    throw new BadRequestError(`not a peer call: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join(', ')}`);
  const call = parsed.data;
  log.debug({ op: call.op, namespace: call.namespace }, 'serving a peer call');
  sendJson(res, 200, { object: await local.run(call) });
}

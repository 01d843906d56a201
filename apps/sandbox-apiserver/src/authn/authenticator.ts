import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { X509Certificate } from 'node:crypto';
import type { DelegatedAuth } from '@sandbox-scale/kube-runtime';
import type { AuthenticationConfig } from './auth-config';
import { parseCaBundle, peerCertificate, subjectOf, verifiedBy } from './client-cert';
import { authenticateRequestHeader, stripRemoteHeaders } from './request-header';
import { withAuthenticatedGroup, type UserInfo } from './user-info';

interface ParsedCas {
  readonly cfg: AuthenticationConfig;
  readonly requestHeader: X509Certificate[];
  readonly client: X509Certificate[];
}

/** The CAs whose names the TLS handshake advertises, so clients pick the right certificate. */
export function acceptedCasOf(cfg: AuthenticationConfig): string[] {
  return [cfg.requestHeaderCa, cfg.clientCa].filter((c): c is string => c !== undefined);
}

/** Who is calling, in kube's order: front proxy, client cert, bearer token. */
export class Authenticator {
  #cas: ParsedCas | undefined;

  /** `config` is read per request, so a reloaded ConfigMap applies to the next one. */
  constructor(
    private readonly config: () => AuthenticationConfig,
    private readonly tokens: DelegatedAuth | undefined,
  ) {}

  #parsed(): ParsedCas {
    const cfg = this.config();
    if (this.#cas?.cfg !== cfg) this.#cas = { cfg, requestHeader: parseCaBundle(cfg.requestHeaderCa), client: parseCaBundle(cfg.clientCa) };
    return this.#cas;
  }

  /** The caller, or undefined for anonymous. X-Remote-* never survive other methods. */
  async authenticate(req: IncomingMessage, signal?: AbortSignal): Promise<UserInfo | undefined> {
    const { cfg, requestHeader, client } = this.#parsed();
    const cert = peerCertificate(req.socket as TLSSocket);
    const fromProxy = authenticateRequestHeader(cert, req.headersDistinct, cfg, requestHeader);
    if (fromProxy !== undefined) return withAuthenticatedGroup(fromProxy);
    stripRemoteHeaders(req.headers, cfg);
    stripRemoteHeaders(req.headersDistinct, cfg);
    if (cert !== undefined && verifiedBy(cert, client)) {
      const s = subjectOf(cert);
      return withAuthenticatedGroup({ username: s.commonName, groups: s.organizations, extra: {} });
    }
    const auth = req.headers.authorization;
    if (this.tokens !== undefined && auth !== undefined && auth.toLowerCase().startsWith('bearer ')) {
      const user = await this.tokens.authenticateToken(auth.slice(7).trim(), signal);
      if (user !== undefined) return withAuthenticatedGroup(user);
    }
    return undefined;
  }
}

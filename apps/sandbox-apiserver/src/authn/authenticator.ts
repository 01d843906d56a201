import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { X509Certificate } from 'node:crypto';
import type { AuthenticationConfig } from './auth-config';
import { parseCaBundle, peerCertificate, subjectOf, verifiedBy } from './client-cert';
import { authenticateRequestHeader, stripRemoteHeaders } from './request-header';
import type { TokenReviewer } from './token-review';
import { withAuthenticatedGroup, type UserInfo } from './user-info';

/** Who is calling, in kube's order: front proxy, client cert, bearer token (k8s-api.md §4.4). */
export class Authenticator {
  readonly #requestHeaderCas: X509Certificate[];
  readonly #clientCas: X509Certificate[];

  constructor(
    private readonly cfg: AuthenticationConfig,
    private readonly tokens: TokenReviewer | undefined,
  ) {
    this.#requestHeaderCas = parseCaBundle(cfg.requestHeaderCa);
    this.#clientCas = parseCaBundle(cfg.clientCa);
  }

  /** CAs whose names the TLS handshake advertises, so clients pick the right certificate. */
  get acceptedCas(): string[] {
    return [this.cfg.requestHeaderCa, this.cfg.clientCa].filter((c): c is string => c !== undefined);
  }

  /** The caller, or undefined for anonymous. X-Remote-* never survive other methods. */
  async authenticate(req: IncomingMessage): Promise<UserInfo | undefined> {
    const cert = peerCertificate(req.socket as TLSSocket);
    const fromProxy = authenticateRequestHeader(cert, req.headers, this.cfg, this.#requestHeaderCas);
    if (fromProxy !== undefined) return withAuthenticatedGroup(fromProxy);
    stripRemoteHeaders(req.headers, this.cfg);
    if (cert !== undefined && verifiedBy(cert, this.#clientCas)) {
      const s = subjectOf(cert);
      return withAuthenticatedGroup({ username: s.commonName, groups: s.organizations, extra: {} });
    }
    const auth = req.headers.authorization;
    if (this.tokens !== undefined && auth !== undefined && auth.toLowerCase().startsWith('bearer ')) {
      const user = await this.tokens.review(auth.slice(7).trim());
      if (user !== undefined) return withAuthenticatedGroup(user);
    }
    return undefined;
  }
}

import type { OwnerRefKey } from '@sandbox-scale/scale-core';

/** Kept apart from claim references' MACs: the same keyring, another domain. */
const DOMAIN = 'sandbox-scale/e2b-envd-access/v1\n';
const TOKEN = /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)\.([A-Za-z0-9_-]{22})$/;

/**
 * envd's access token for one sandbox: `<namespace>.<MAC>`, the MAC made with the control
 * plane's claim-reference keyring over the namespace and the sandbox's name. The control plane
 * hands it out with every create and connect (to a caller Kubernetes let read the sandbox); envd's
 * calls carry it back as X-Access-Token, and it names the one sandbox they may reach. It is never
 * the node's sandbox token, and a keyring rotation moves it along as it moves claim references.
 */
export class EnvdTokens {
  constructor(private readonly key: OwnerRefKey) {}

  issue(namespace: string, name: string): string {
    return `${namespace}.${this.key.mac(`${namespace}\n${name}`, DOMAIN)}`;
  }

  /** The sandbox's namespace when `token` is the one issued for `name` there; undefined otherwise. */
  namespaceOf(token: string | undefined, name: string): string | undefined {
    const m = TOKEN.exec(token ?? '');
    const namespace = m?.[1];
    const mac = m?.[3];
    if (namespace === undefined || mac === undefined) return undefined;
    return this.key.verify(`${namespace}\n${name}`, mac, DOMAIN) ? namespace : undefined;
  }
}

import { E2bApiError } from '@sandbox-scale/e2b-protocol';
import type { UserInfo } from '@sandbox-scale/kube-runtime';

/**
 * Who calls the e2b API, and in which namespace its sandboxes live. The API key is a Kubernetes
 * bearer token (TokenReview says whose), sent as `X-API-KEY` on control-plane calls; envd's
 * calls carry the sandbox's own access token instead (envd-token.ts). A
 * ServiceAccount's sandboxes live in its own namespace; any other user's in the namespace the
 * chart names for them, or nowhere (refused) when it names none. Nothing a client sends names
 * the namespace.
 */

const SERVICE_ACCOUNT = /^system:serviceaccount:([a-z0-9]([-a-z0-9]*[a-z0-9])?):[^:]+$/;

/** The one value of a header the e2b SDKs send once; absent, or sent twice, is no key at all. */
export function oneHeader(headers: NodeJS.Dict<string | string[]>, name: string): string | undefined {
  const v = headers[name];
  if (Array.isArray(v)) return v.length === 1 ? v[0] : undefined;
  return v === undefined || v === '' ? undefined : v;
}

/** The API key of a control-plane call. */
export function apiKeyOf(headers: NodeJS.Dict<string | string[]>): string {
  const key = oneHeader(headers, 'x-api-key');
  if (key === undefined)
    throw new E2bApiError(401, 'An API key is required: X-API-KEY: <a Kubernetes token>, e.g. from kubectl create token');
  return key;
}

/** The namespace of a caller's sandboxes; a 403 naming why when it has none. */
export function e2bNamespaceOf(user: UserInfo, defaultNamespace: string | undefined): string {
  const sa = SERVICE_ACCOUNT.exec(user.username);
  if (sa?.[1] !== undefined) return sa[1];
  if (defaultNamespace !== undefined && defaultNamespace !== '') return defaultNamespace;
  throw new E2bApiError(
    403,
    `${user.username} is not a ServiceAccount, and no namespace is set for other users' e2b sandboxes (the chart's e2b.defaultNamespace)`,
  );
}

/**
 * The sandbox of an envd URL's host form, `49983-<sandbox>.<domain>[:port]`, for a client that
 * sets no E2b-Sandbox-Id: the first DNS label after the port, so a domain's own dots never
 * become part of the name.
 */
export function sandboxIdOfHost(host: string | undefined): string | undefined {
  return /^49983-([a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)\./.exec(host ?? '')?.[1];
}

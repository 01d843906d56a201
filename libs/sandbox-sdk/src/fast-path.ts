import { readFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { FAST_PATH_AUDIENCE, findInCauseChain } from '@sandbox-scale/scale-core';
import { z } from 'zod';
import { FastPathUnavailableError, isApiError, isForbidden, isNotFound, type UnavailableError } from './errors';
import { call } from './kube-api';

/** Where the fast path is and how to authenticate to it; every field optional (found through the cluster). */
export interface FastPathOptions {
  /** Base URL (`https://host:port`); default: $SANDBOX_SCALE_FAST_PATH_URL, else the chart's Service. */
  url?: string;
  /** PEM of the CA that signed the fast path's serving certificate; default: $SANDBOX_SCALE_FAST_PATH_CA_FILE, else the system's trust store. */
  ca?: string;
  caFile?: string;
  /** A bearer token issued for the fast path's audience; default: $SANDBOX_SCALE_FAST_PATH_TOKEN_FILE, else minted for the kubeconfig's ServiceAccount. */
  token?: string;
  tokenFile?: string;
  /** The claim-controller Service (default `sandbox-system/sandbox-scale-claim-controller`, the chart's defaults). */
  service?: { namespace: string; name: string };
  /** The audience tokens are minted for (default the chart's `sandbox-scale-fast-path`). */
  audience?: string;
}

export const DEFAULT_FAST_PATH_SERVICE = { namespace: 'sandbox-system', name: 'sandbox-scale-claim-controller' };
/** The chart's `claimController.fastPath.servicePort`, used when the Service cannot be read. */
const DEFAULT_SERVICE_PORT = 443;

const ServiceSchema = z.looseObject({
  spec: z.looseObject({
    type: z.string().optional(),
    externalName: z.string().optional(),
    ports: z.array(z.looseObject({ name: z.string().optional(), port: z.number() })).optional(),
  }),
  status: z
    .looseObject({
      loadBalancer: z
        .looseObject({ ingress: z.array(z.looseObject({ ip: z.string().optional(), hostname: z.string().optional() })).optional() })
        .optional(),
    })
    .optional(),
});

const inCluster = (env: NodeJS.ProcessEnv): boolean => Boolean(env.KUBERNETES_SERVICE_HOST);
const hostPort = (host: string, port: number): string => `https://${host.includes(':') ? `[${host}]` : host}:${port}`;

/**
 * The fast path's URL, found the way a client in or out of the cluster can reach it: a URL
 * given, else the chart's claim-controller Service — its LoadBalancer ingress or ExternalName
 * from anywhere, its cluster DNS name from inside the cluster. A ClusterIP Service seen from
 * outside is refused with what to do, never guessed at.
 */
export async function locateFastPath(
  kc: KubeConfig,
  o: FastPathOptions,
  signal?: AbortSignal,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const given = o.url ?? env.SANDBOX_SCALE_FAST_PATH_URL;
  if (given) return given.replace(/\/+$/, '');
  const svc = o.service ?? DEFAULT_FAST_PATH_SERVICE;
  const dns = (port: number): string => hostPort(`${svc.name}.${svc.namespace}.svc`, port);
  let raw: unknown;
  try {
    raw = await call(
      kc,
      { method: 'GET', path: `/api/v1/namespaces/${encodeURIComponent(svc.namespace)}/services/${encodeURIComponent(svc.name)}`, signal },
      { verb: 'get', resource: 'services', namespace: svc.namespace, name: svc.name },
    );
  } catch (err) {
    if ((isForbidden(err) || isNotFound(err)) && inCluster(env)) return dns(DEFAULT_SERVICE_PORT);
    if (isForbidden(err) || isNotFound(err)) {
      throw new FastPathUnavailableError(
        `cannot find the fast path: ${(err as Error).message}; give its URL (SANDBOX_SCALE_FAST_PATH_URL or fastPath.url) or use the SandboxClaim path`,
        { cause: err },
      );
    }
    throw err;
  }
  const s = ServiceSchema.parse(raw);
  const port = (s.spec.ports?.find((p) => p.name === 'https') ?? s.spec.ports?.[0])?.port ?? DEFAULT_SERVICE_PORT;
  if (s.spec.type === 'ExternalName' && s.spec.externalName) return hostPort(s.spec.externalName, port);
  const ingress = s.status?.loadBalancer?.ingress?.[0];
  const lbHost = ingress?.hostname ?? ingress?.ip;
  if (s.spec.type === 'LoadBalancer' && lbHost) return hostPort(lbHost, port);
  if (inCluster(env)) return dns(port);
  throw new FastPathUnavailableError(
    `the fast path Service ${svc.namespace}/${svc.name} is ${s.spec.type ?? 'ClusterIP'}, reachable only inside the cluster; give a URL it is exposed at (SANDBOX_SCALE_FAST_PATH_URL or fastPath.url) or use the SandboxClaim path`,
  );
}

export function fastPathCa(o: FastPathOptions, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (o.ca) return o.ca;
  const file = o.caFile ?? env.SANDBOX_SCALE_FAST_PATH_CA_FILE;
  return file ? readFileSync(file, 'utf8') : undefined;
}

const SelfSubjectReviewSchema = z.looseObject({
  status: z.looseObject({ userInfo: z.looseObject({ username: z.string().optional() }).optional() }).optional(),
});
const TokenRequestSchema = z.looseObject({ status: z.looseObject({ token: z.string().min(1) }) });
const SA_USER = /^system:serviceaccount:([^:]+):([^:]+)$/;

/**
 * A bearer token for the fast path. Its TokenReview only accepts tokens issued for its own
 * audience, so the kubeconfig's own token (meant for the API server) is never sent there: a
 * ServiceAccount user gets a fresh short-lived one through TokenRequest instead.
 */
export async function fastPathToken(
  kc: KubeConfig,
  o: FastPathOptions,
  signal?: AbortSignal,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  if (o.token) return o.token;
  const file = o.tokenFile ?? env.SANDBOX_SCALE_FAST_PATH_TOKEN_FILE;
  if (file) return readFileSync(file, 'utf8').trim();
  const audience = o.audience ?? FAST_PATH_AUDIENCE;
  const review = SelfSubjectReviewSchema.parse(
    await call(
      kc,
      {
        method: 'POST',
        path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
        signal,
      },
      { verb: 'create', resource: 'selfsubjectreviews', group: 'authentication.k8s.io' },
    ),
  );
  const user = review.status?.userInfo?.username ?? '';
  const sa = SA_USER.exec(user);
  if (!sa) {
    throw new FastPathUnavailableError(
      `no token for the fast path's audience "${audience}": user "${user}" is not a ServiceAccount; pass one (SANDBOX_SCALE_FAST_PATH_TOKEN_FILE or fastPath.token), e.g. from \`kubectl create token <serviceaccount> --audience ${audience}\``,
    );
  }
  const [, namespace = '', name = ''] = sa;
  const tr = await call(
    kc,
    {
      method: 'POST',
      path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(name)}/token`,
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: [audience], expirationSeconds: 600 } },
      signal,
    },
    { verb: 'create', resource: 'serviceaccounts/token', namespace, name },
  );
  return TokenRequestSchema.parse(tr).status.token;
}

/**
 * A KubeConfig whose one cluster is the fast path, so its calls go through the same transport
 * (kubeRequest: TLS, bearer auth, Status errors) as every API call.
 */
export function fastPathKubeConfig(url: string, token: string, ca: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'fast-path', server: url, skipTLSVerify: false, ...(ca ? { caData: Buffer.from(ca).toString('base64') } : {}) }],
    users: [{ name: 'fast-path', token }],
    contexts: [{ name: 'fast-path', cluster: 'fast-path', user: 'fast-path' }],
    currentContext: 'fast-path',
  });
  return kc;
}

export const AssignmentSchema = z.looseObject({
  namespace: z.string(),
  name: z.string(),
  claimId: z.string(),
  node: z.string(),
  address: z.string().default(''),
  token: z.string().default(''),
  deadline: z.string().optional(),
});
export type Assignment = z.infer<typeof AssignmentSchema>;

/**
 * True for an answer given before anything was claimed, so a retry cannot claim twice: 503 with
 * a Retry-After (no warm VM now) or 429 (a per-namespace or per-caller cap). A 503 without one,
 * a 5xx or a lost connection may come after a VM was handed over, and is never retried.
 */
export function isRetryableBeforeClaim(err: unknown): boolean {
  const e = findInCauseChain<UnavailableError>(err, 'UnavailableError');
  return e !== undefined && (e.code === 429 || e.retryAfterSeconds !== undefined);
}

/** Codes of a connection that never carried the request: nothing can have been claimed. */
const NOT_SENT = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'CERT_HAS_EXPIRED',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * Whether a fast-path POST that failed after it was sent may have claimed a VM: cancelled in
 * flight, a 5xx, or a connection lost mid-request. A 4xx and a connection never made cannot.
 */
export function mayHaveClaimed(err: unknown, abortedInFlight: boolean): boolean {
  if (abortedInFlight) return true;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'number') return code >= 500;
  const seen = new Set<unknown>();
  for (let cur: unknown = err; cur instanceof Error && !seen.has(cur); cur = (cur as { cause?: unknown }).cause) {
    const c = (cur as { code?: unknown }).code;
    if (typeof c === 'string' && NOT_SENT.has(c)) return false;
    seen.add(cur);
  }
  return !isApiError(err);
}

import { z } from 'zod';
import {
  bindAddressFlag,
  DEFAULT_TOKEN_REVIEWS_IN_FLIGHT,
  DEFAULT_SERVER_LIMITS,
  durationFlag,
  managerFlagShape,
} from '@sandbox-scale/kube-runtime';
import { sandboxdTokensFlag } from '@sandbox-scale/sandboxd-client';
import { FAST_PATH_AUDIENCE } from '@sandbox-scale/scale-core';

const count = (dflt: number, min = 1) => z.coerce.number().int().min(min).default(dflt);
const audiences = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter((x) => x !== ''),
  )
  .pipe(z.array(z.string()).min(1, 'name at least one audience'));

/** Flags of claim-controller (env fallback SANDBOX_SCALE_<FLAG>). */
export const ClaimControllerFlagsSchema = z.object({
  ...managerFlagShape,
  sandboxdTokens: sandboxdTokensFlag,
  fleetTokenFile: z
    .string()
    .default('')
    .describe(
      'File holding the sandboxd fleet token (a Secret mount); else env SANDBOX_SCALE_FLEET_TOKEN. Without a token every node write is refused',
    ),
  claimRefKeyFile: z
    .string()
    .default('')
    .describe(
      'File holding the key claim references are proven with (base64, at least 32 bytes; the one sandbox-apiserver has); else env SANDBOX_SCALE_CLAIM_REF_KEY. Required',
    ),
  fastPathBindAddress: bindAddressFlag(':8443').describe('Where the HTTPS fast path POST /v1/claims listens (0 turns it off)'),
  fastPathMaxInflightPerUser: count(400).describe('Fast-path claims one user may have in flight at once; more are answered 429'),
  fastPathMaxConnections: count(DEFAULT_SERVER_LIMITS.maxConnections).describe(
    'Connections the fast path holds open at once; one past it is closed as it arrives, so one caller opening sockets without end cannot take them from every other',
  ),
  fastPathMaxTokenReviewsInFlight: count(DEFAULT_TOKEN_REVIEWS_IN_FLIGHT).describe(
    'TokenReviews of fast-path callers open at once; a bearer token not cached is answered 429 past it, so a flood of made-up tokens (which come before any per-user cap) cannot queue without bound. Cached tokens are still served',
  ),
  tlsCertFile: z
    .string()
    .default('')
    .describe('Serving certificate of the fast path (PEM); empty with --tls-private-key-file empty: self-signed for localhost'),
  fastPathAudiences: audiences
    .prefault(FAST_PATH_AUDIENCE)
    .describe(
      `Comma-separated audiences a fast-path bearer token must be issued for (TokenReview spec.audiences); a token for any other service is refused. Callers mint one with \`kubectl create token <sa> --audience ${FAST_PATH_AUDIENCE}\` or a projected token volume. Adding the API server's own audience (its --api-audiences) also accepts ordinary ServiceAccount tokens, which every service the token was shown to could then replay here`,
    ),
  tlsPrivateKeyFile: z.string().default('').describe('Private key of --tls-cert-file (PEM)'),
  coldClaimTimeout: durationFlag('120s').describe(
    "Bound on a cold claim, where the node boots a VM and blocks (pools with coldStart WhenNoWarmCapacity); above sandboxd's own 90 s cold readiness limit so a booting node always answers first",
  ),
  failedNodeCooldown: durationFlag('15s').describe(
    'How long a node whose claim call failed (5xx, timeout, unusable reply) is passed over while other nodes can serve the pool',
  ),
  orphanInterval: durationFlag('30s').describe('Cadence of the orphan pass that adopts deliveries whose Bound record was lost'),
  sandboxLeaseTtl: durationFlag('15m').describe(
    "Node lease asked for a claim without spec.lifecycle.shutdownTime, at claim and at each renewal (0s = the node's default, 5m on sandboxd); renewed at 40-60 % of it while the claim lives, so it only bounds how long a VM outlives a control plane that is gone",
  ),
  leaseRenewalsPerSecond: count(500).describe(
    'Most node lease renewals per second (spread over every node); with lease L, about rate x 0.6 x L claims can be kept alive',
  ),
  namespaceRecheckInterval: durationFlag('20s').describe(
    'How often a claim refused because claim-controller may not write Secrets in its namespace (NamespaceNotEnabled) asks RBAC again; the claim binds by itself once the namespace is enabled',
  ),
  maxConcurrentReconciles: count(64).describe(
    "SandboxClaims reconciled at once; sized for bursts, since a claim's reconcile mostly waits on the API server and a node",
  ),
  recordConcurrency: count(64).describe('Async Bound records written at once (fast path); each mostly waits on the API server'),
  recordAttempts: count(5).describe('Tries per async Bound record before it is left to the orphan pass'),
  fastPathRecordDefer: durationFlag('2s')
    .pipe(z.number().max(9_000, 'keep it under 9s: the wait is part of a record attempt, which has 10s'))
    .describe(
      "How long a fast-path claim's Bound record waits while answers keep being served before it is written anyway (one at a time until they pause); a burst is answered without its records' API writes competing for the CPU, and recorded as it pauses. 0s writes one record at a time throughout",
    ),
  recordQueueMaxPending: count(10_000).describe(
    'Fast-path Bound records held at once (each with its token); a delivery that finds the queue full is recorded by the orphan pass instead',
  ),
  fastPathAdvertiseAddress: z
    .string()
    .default('')
    .describe(
      "This replica's address as the EndpointSlices of --fast-path-service list it (the pod IP); with both, each namespace's fast-path claims are served by one replica (the others hand them over), so names and --fast-path-max-claims-per-namespace hold across replicas. Empty = this replica serves every namespace itself",
    ),
  fastPathService: z
    .string()
    .default('')
    .describe("Name of the fast path's Service, whose ready endpoints are the replicas that serve it (in --fast-path-service-namespace)"),
  fastPathServiceNamespace: z.string().default('').describe("Namespace of --fast-path-service; empty = this pod's own namespace"),
  fastPathPeerCaFile: z
    .string()
    .default('')
    .describe(
      "CA (PEM) the replicas' serving certificate chains to; a replica must present that certificate before another sends it its credentials. Empty = the serving certificate itself",
    ),
  fastPathMaxClaimsPerNamespace: count(0, 0).describe(
    'Live fast-path claims allowed per namespace (0: no cap); over it POST /v1/claims answers 429 before any VM is claimed',
  ),
});
export type ClaimControllerFlags = z.infer<typeof ClaimControllerFlagsSchema>;

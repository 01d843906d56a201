import { readFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import { DEFAULT_INFLIGHT_CAPS, DEFAULT_TOKEN_REVIEWS_IN_FLIGHT, DEFAULT_SERVER_LIMITS, durationFlag } from '@sandbox-scale/kube-runtime';
import type { OwnerRefKey } from '@sandbox-scale/scale-core';
import { sandboxdTokensFlag } from '@sandbox-scale/sandboxd-client';
import { DEFAULT_FAN_OUT_CAPS } from './storage/fan-out-gate';
import { DEFAULT_MAX_FILE_BYTES } from './data-plane/files-storage';
import { DEFAULT_MAX_EXEC_OUTPUT_BYTES } from './data-plane/exec-storage';
import { DEFAULT_REPLY_MEMORY } from './data-plane/install';
import { e2bConfigOf, e2bFlagShape } from './e2b/e2b-flags';
import { routerConfigOf, routerFlagShape } from './router/router-flags';
import { z } from 'zod';
import type { SandboxApiserverConfig } from './server';

/** Flags of sandbox-apiserver, spelled as kube components spell them (env fallback SANDBOX_SCALE_<FLAG>). */
export const SandboxApiserverFlagsSchema = z.object({
  kubeconfig: z.string().default('').describe('Path to a kubeconfig; empty means $KUBECONFIG, else the in-cluster service account'),
  securePort: z.coerce.number().int().min(0).max(65535).default(6443).describe('HTTPS port to serve on (0 = any free port)'),
  bindAddress: z.string().default('0.0.0.0').describe('Address to listen on'),
  tlsCertFile: z.string().default('').describe('Serving certificate (PEM); empty = a self-signed one for <service>.<namespace>.svc'),
  tlsPrivateKeyFile: z.string().default('').describe('Key of --tls-cert-file (PEM)'),
  serviceName: z
    .string()
    .default('sandbox-apiserver')
    .describe('Name of the Service the APIService points at (names the self-signed cert)'),
  serviceNamespace: z.string().default('sandbox-system').describe('Namespace of that Service'),
  advertiseAddress: z
    .string()
    .default('')
    .describe(
      "This replica's address as the Service's EndpointSlices list it (the pod IP); with it, replicas route each name to its owner. Empty = this replica acts alone",
    ),
  peerCaFile: z
    .string()
    .default('')
    .describe(
      "CA (PEM) the replicas' serving certificate chains to; a peer must present that certificate before it is sent this replica's credentials. Empty = the serving certificate itself",
    ),
  peerSettlePeriod: durationFlag('60s').describe(
    'After the peers change, how long a miss also asks every peer and the nodes (a just-created sandbox may sit with its previous owner until its node publishes it)',
  ),
  fleetTokenFile: z
    .string()
    .default('')
    .describe(
      'File holding the sandboxd fleet token (a Secret mount); else env SANDBOX_SCALE_FLEET_TOKEN; without one, writes are refused',
    ),
  sandboxdTokens: sandboxdTokensFlag,
  claimRefKeyFile: z
    .string()
    .default('')
    .describe(
      'File holding the key claim references are proven with (base64, at least 32 bytes; the one claim-controller has); else env SANDBOX_SCALE_CLAIM_REF_KEY. Required',
    ),
  inventoryGracePeriod: durationFlag('60s').describe(
    'How long the sandboxes of a vanished NodeInventory stay listed, so a brief gap is no DELETED/ADDED',
  ),
  bookmarkInterval: durationFlag('60s').describe('How often a watch with allowWatchBookmarks gets a BOOKMARK'),
  shutdownDelayDuration: durationFlag('0s').describe(
    'On SIGTERM, how long to keep serving with /readyz failing before closing, so endpoints, kube-proxy and the aggregator stop routing here first (as kube-apiserver)',
  ),
  watchHistory: z.coerce
    .number()
    .int()
    .min(100)
    .default(10_000)
    .describe('Changes kept for resuming watches; older resourceVersions get 410 Expired'),
  claimIndexMaxBytes: z.coerce
    .number()
    .int()
    .min(1024)
    .default(64 * 1024 * 1024)
    .describe('Heap budget of the claim-time index (read-after-create)'),
  sandboxLeaseTtl: durationFlag('15m').describe(
    "Node lease of a sandbox that lives until deleted (created, forked or claimed from a snapshot without a TTL), asked at claim and renewed at 40-60 % of it while it is served (0s = the node's default); bounds how long its VM outlives a control plane that is gone",
  ),
  leaseRenewalsPerSecond: z.coerce.number().int().min(1).default(500).describe('Most node lease renewals per second, over every node'),
  noticePublisher: z
    .string()
    .default('')
    .refine((v) => v === '' || /^system:serviceaccount:[a-z0-9-]+:[a-z0-9.-]+$/.test(v), 'must be system:serviceaccount:<namespace>:<name>')
    .describe(
      'ServiceAccount username of the inventory-publishers; with it they tell each replica of changes on their own node between publishes (token bound to a pod on that node, checked by TokenReview). Empty = off',
    ),
  maxWatches: z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_INFLIGHT_CAPS.maxWatches)
    .describe('Open watches of all callers together; more are answered 429'),
  maxWatchesPerUser: z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_INFLIGHT_CAPS.maxWatchesPerUser)
    .describe('Open watches of one user; more are answered 429'),
  maxWatchesPerNamespace: z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_INFLIGHT_CAPS.maxWatchesPerNamespace)
    .describe(
      "Open watches of one namespace, all its users together (a tenant's ServiceAccounts share it); more are answered 429. Watches across all namespaces count against the user and overall caps only",
    ),
  maxConnections: z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_SERVER_LIMITS.maxConnections)
    .describe(
      'Connections held open at once (kept-alive and watches included); one past it is closed as it arrives, so one caller opening sockets without end cannot take them from every other',
    ),
  maxTokenReviewsInFlight: z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_TOKEN_REVIEWS_IN_FLIGHT)
    .describe(
      'TokenReviews this replica has open at once; a bearer token not cached is answered 429 past it, so a flood of made-up tokens (which come before any per-user cap) cannot queue without bound. Cached tokens are still served',
    ),
  maxNodeFanOuts: z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_FAN_OUT_CAPS.maxInFlight)
    .describe(
      "Requests that ask every node (a sandbox's snapshots, deletesnapshot, claimsnapshot) in flight at once, all namespaces together; more are answered 429",
    ),
  maxNodeFanOutsPerNamespace: z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_FAN_OUT_CAPS.maxPerNamespace)
    .describe('Requests that ask every node in flight at once in one namespace, all its users together; more are answered 429'),
  maxRequestsPerUser: z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_INFLIGHT_CAPS.maxRequestsPerUser)
    .describe('Requests of one user served at once (watches aside); more are answered 429'),
  maxStreams: z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_INFLIGHT_CAPS.maxStreams)
    .describe('Exec, file transfers and port-forwards this replica serves at once, all namespaces together; more are answered 429'),
  maxStreamsPerNamespace: z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_INFLIGHT_CAPS.maxStreamsPerNamespace)
    .describe(
      "Exec, file transfers and port-forwards of one namespace's sandboxes at once, all its users together (a tenant's ServiceAccounts share it); more are answered 429",
    ),
  maxExecTimeout: durationFlag('10m').describe(
    'The longest an exec runs: an exec without timeoutSeconds (or with 0) gets this, and one asking for more is answered 400 naming timeoutSeconds',
  ),
  portForwardIdleTimeout: durationFlag('30m').describe('A port-forward with no byte either way for this long is closed'),
  portForwardMaxDuration: durationFlag('4h').describe('A port-forward is closed after this long, however busy'),
  maxFileBytes: z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_MAX_FILE_BYTES)
    .describe(
      'The largest body one PUT of sandboxes/files writes (a file, or a tar stream); a larger one is answered 413 and nothing of it is written',
    ),
  maxExecOutputBytes: z.coerce
    .number()
    .int()
    .min(1)
    .max(DEFAULT_MAX_EXEC_OUTPUT_BYTES)
    .default(DEFAULT_MAX_EXEC_OUTPUT_BYTES)
    .describe(
      "The most stdout and stderr together one POST of sandboxes/exec answers with (at most the node's own cap, 8 MiB); a command printing more is answered 413 naming this cap, and its reply is not read past it",
    ),
  maxReplyBytes: z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_REPLY_MEMORY.maxBytes)
    .describe(
      'Bytes the replies of exec in flight may hold in this replica, all namespaces together (each reply byte counts twice while it is read and decoded; then only the output, which is answered in slices at the pace the caller reads); a request that would pass it is answered 429 with Retry-After instead of the process running out of memory',
    ),
  maxReplyBytesPerNamespace: z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_REPLY_MEMORY.maxBytesPerNamespace)
    .describe(
      "Bytes the replies of exec in flight may hold for one namespace, all its users together (a tenant's ServiceAccounts share it); past it 429 with Retry-After, while other namespaces keep the rest of --max-reply-bytes",
    ),
  ...routerFlagShape,
  ...e2bFlagShape,
});
export type SandboxApiserverFlags = z.infer<typeof SandboxApiserverFlagsSchema>;

/** What the flags name outside themselves, read once at start (main.ts reports every failure at once). */
export interface SandboxApiserverInputs {
  kubeConfig: KubeConfig;
  fleetToken: string;
  claimRefKey: OwnerRefKey;
  /** PEM of --peer-ca-file; undefined when it is empty. */
  peerCaPem: string | undefined;
}

/** The peer CA of --peer-ca-file; undefined when none is given (the serving certificate is the CA). */
export function peerCaOf(flags: Pick<SandboxApiserverFlags, 'peerCaFile'>): string | undefined {
  return flags.peerCaFile ? readFileSync(flags.peerCaFile, 'utf8') : undefined;
}

export function configFromFlags(flags: SandboxApiserverFlags, inputs: SandboxApiserverInputs): SandboxApiserverConfig {
  return {
    kubeConfig: inputs.kubeConfig,
    securePort: flags.securePort,
    bindAddress: flags.bindAddress,
    ...(flags.tlsCertFile ? { tlsCertFile: flags.tlsCertFile, tlsPrivateKeyFile: flags.tlsPrivateKeyFile } : {}),
    serviceName: flags.serviceName,
    serviceNamespace: flags.serviceNamespace,
    fleetToken: inputs.fleetToken,
    sandboxdTokens: flags.sandboxdTokens,
    claimRefKey: inputs.claimRefKey,
    advertiseAddress: flags.advertiseAddress,
    ...(inputs.peerCaPem === undefined ? {} : { peerCaPem: inputs.peerCaPem, peerCaFile: flags.peerCaFile }),
    peerSettleMs: flags.peerSettlePeriod,
    inventoryGraceMs: flags.inventoryGracePeriod,
    bookmarkIntervalMs: flags.bookmarkInterval,
    shutdownDelayMs: flags.shutdownDelayDuration,
    watchHistory: flags.watchHistory,
    claimIndexMaxBytes: flags.claimIndexMaxBytes,
    leaseTtlSeconds: Math.ceil(flags.sandboxLeaseTtl / 1000),
    leaseRenewalsPerSecond: flags.leaseRenewalsPerSecond,
    noticePublisher: flags.noticePublisher,
    maxConnections: flags.maxConnections,
    maxTokenReviewsInFlight: flags.maxTokenReviewsInFlight,
    maxFileBytes: flags.maxFileBytes,
    maxExecOutputBytes: flags.maxExecOutputBytes,
    maxExecTimeoutSeconds: Math.ceil(flags.maxExecTimeout / 1000),
    portForwardBounds: { idleTimeoutMs: flags.portForwardIdleTimeout, maxDurationMs: flags.portForwardMaxDuration },
    replyMemory: { maxBytes: flags.maxReplyBytes, maxBytesPerNamespace: flags.maxReplyBytesPerNamespace },
    fanOut: { maxInFlight: flags.maxNodeFanOuts, maxPerNamespace: flags.maxNodeFanOutsPerNamespace },
    ...routerConfigOf(flags),
    ...e2bConfigOf(flags),
    inflight: {
      maxWatches: flags.maxWatches,
      maxWatchesPerUser: flags.maxWatchesPerUser,
      maxWatchesPerNamespace: flags.maxWatchesPerNamespace,
      maxRequestsPerUser: flags.maxRequestsPerUser,
      maxStreams: flags.maxStreams,
      maxStreamsPerNamespace: flags.maxStreamsPerNamespace,
    },
  };
}

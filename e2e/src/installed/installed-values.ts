/**
 * The one configuration the installed suites share: `helm install` with the chart's defaults
 * (2 replicas of each Deployment, leader election, the DaemonSet publisher, the APIService
 * through its Service) plus the few values the e2e suites need that a local system gives each
 * suite on its own. Each is also what the local suites pass, so both targets test the same thing.
 */

/** Live fast-path claims per namespace (security-tenancy fills the cap and is refused past it). */
export const FAST_PATH_CAP = 3;
/** Open watches per user on sandbox-apiserver (security-hostile opens one more). */
export const MAX_WATCHES_PER_USER = 3;
/** Publish interval of the publishers: suites wait on inventories, a short one keeps them quick. */
export const PUBLISH_INTERVAL = '1s';
/**
 * claim-controller: a short orphan pass and records that give up after two tries, so a record a
 * ResourceQuota refuses is left to that pass and recorded soon after it may be (security-tenancy,
 * faults).
 */
export const CLAIM_CONTROLLER_ARGS = ['--orphan-interval=2s', '--record-attempts=2'];
/** Open watches per namespace on sandbox-apiserver (tenant-bounds fills it with several users). */
export const MAX_WATCHES_PER_NAMESPACE = 2 * MAX_WATCHES_PER_USER;
/** TokenReviews sandbox-apiserver has open at once (tenant-bounds floods it with unknown tokens). */
export const MAX_TOKEN_REVIEWS_IN_FLIGHT = 8;
/** Requests that ask every node in flight at once in one namespace (tenant-bounds floods a sandbox's snapshots). */
export const MAX_NODE_FAN_OUTS_PER_NAMESPACE = 2;
/** The largest file one PUT of sandboxes/files writes (data-plane-api writes one byte more and is refused). */
export const MAX_FILE_BYTES = 4 * 1024 * 1024;
/**
 * Exec, file transfers and port-forwards of one namespace at once, and router relays to one
 * namespace's sandboxes (fair-share-streams fills both through 25 ServiceAccounts). Above what
 * any other suite holds at once in one namespace.
 */
export const MAX_STREAMS_PER_NAMESPACE = 16;
export const ROUTER_MAX_RELAYS_PER_NAMESPACE = 16;
export const SANDBOX_APISERVER_ARGS = [
  `--max-watches-per-user=${MAX_WATCHES_PER_USER}`,
  `--max-watches-per-namespace=${MAX_WATCHES_PER_NAMESPACE}`,
  `--max-token-reviews-in-flight=${MAX_TOKEN_REVIEWS_IN_FLIGHT}`,
  `--max-node-fan-outs-per-namespace=${MAX_NODE_FAN_OUTS_PER_NAMESPACE}`,
];
/**
 * Warm sandboxes warmpool-driver keeps for one pool and for one namespace's pools together
 * (tenant-bounds-pools sets spec.replicas far over them). Above what any other suite's pools ask
 * (60 in one pool at most), so they limit only that suite's.
 */
export const MAX_REPLICAS_PER_POOL = 64;
export const MAX_REPLICAS_PER_NAMESPACE = 96;
export const WARMPOOL_DRIVER_ARGS = [
  `--max-replicas-per-pool=${MAX_REPLICAS_PER_POOL}`,
  `--max-replicas-per-namespace=${MAX_REPLICAS_PER_NAMESPACE}`,
];

/**
 * The router Service's name: the one agent-sandbox's Python client port-forwards to in LocalTunnel
 * mode, which reaches the router's tunnel listener (router.tunnel.enabled) without a token.
 */
export const ROUTER_SERVICE_NAME = 'sandbox-router-svc';

/** The `helm install` arguments beyond image registry, tag and pull policy. */
/**
 * Each step of a CA rotation: the node's kubelet syncs every 10 s (node.ts) and every listener
 * reads its files every 10 s, so a step is seen everywhere well within it.
 */
export const CA_ROTATION_OVERLAP = '40s';

/**
 * The node side's namespace, at Pod Security "privileged": the publisher DaemonSet mounts the
 * node's token file (hostPath), and sandboxd-sim stands in for a node daemon. The control plane's
 * own namespace enforces "restricted".
 */
export const NODE_NAMESPACE = 'sandbox-nodes';

/**
 * The two alerts monitoring.installed provokes, with a `for` of a minute instead of five, set as a
 * platform team tunes them (metrics.prometheusRule.overrides): the suite waits each one's `for`.
 */
export const ALERT_OVERRIDES = {
  SandboxScaleNodeInventoryStale: { for: '1m' },
  SandboxScaleTargetDown: { for: '1m' },
};

export function installedSuiteHelmArgs(): string[] {
  return [
    '--set-json',
    `metrics.prometheusRule.overrides=${JSON.stringify(ALERT_OVERRIDES)}`,
    '--set',
    `inventoryPublisher.namespace=${NODE_NAMESPACE}`,
    '--set',
    `inventoryPublisher.publishInterval=${PUBLISH_INTERVAL}`,
    '--set',
    `claimController.fastPath.maxClaimsPerNamespace=${FAST_PATH_CAP}`,
    '--set-json',
    `claimController.extraArgs=${JSON.stringify(CLAIM_CONTROLLER_ARGS)}`,
    '--set-json',
    `sandboxApiserver.extraArgs=${JSON.stringify(SANDBOX_APISERVER_ARGS)}`,
    '--set',
    `sandboxApiserver.maxFileBytes=${MAX_FILE_BYTES}`,
    // the chart's values, not extraArgs: the installed run also checks they reach the flags
    '--set',
    `warmpoolDriver.maxReplicasPerPool=${MAX_REPLICAS_PER_POOL}`,
    '--set',
    `warmpoolDriver.maxReplicasPerNamespace=${MAX_REPLICAS_PER_NAMESPACE}`,
    '--set',
    `router.serviceName=${ROUTER_SERVICE_NAME}`,
    '--set',
    'router.tunnel.enabled=true',
    '--set',
    `sandboxApiserver.maxStreamsPerNamespace=${MAX_STREAMS_PER_NAMESPACE}`,
    '--set',
    `router.maxRelaysPerNamespace=${ROUTER_MAX_RELAYS_PER_NAMESPACE}`,
    '--set',
    `certificates.caRotationOverlap=${CA_ROTATION_OVERLAP}`,
    // e2b's API behind its own Service, over HTTPS with the serving certificate
    '--set',
    'e2b.enabled=true',
  ];
}

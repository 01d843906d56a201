/**
 * Every identifier the system writes to or reads from Kubernetes and sandboxd. Call sites use
 * these names, never string literals, so a key can only be spelled one way.
 * Values match agent-sandbox's where it names the same thing, so its clients and tools keep working.
 */

/** The aggregated group: served only by sandbox-apiserver (never a CRD). */
export const SANDBOX_GROUP = 'agents.x-k8s.io';
/** The CRD group. NodeInventory lives here because the APIService owns all of agents.x-k8s.io/v1beta1. */
export const EXTENSIONS_GROUP = 'extensions.agents.x-k8s.io';
export const API_VERSION = 'v1beta1';
export const SANDBOX_API_VERSION = `${SANDBOX_GROUP}/${API_VERSION}` as const;
export const EXTENSIONS_API_VERSION = `${EXTENSIONS_GROUP}/${API_VERSION}` as const;

/**
 * Group, version, kind, list kind, plural, singular and short names of every resource this
 * project serves or defines: each entry is the one descriptor of its kind (a kube-runtime
 * KubeResource as it stands), used by every app, test and bench.
 */
export const RESOURCES = {
  sandbox: {
    group: SANDBOX_GROUP,
    version: API_VERSION,
    kind: 'Sandbox',
    listKind: 'SandboxList',
    plural: 'sandboxes',
    singular: 'sandbox',
    shortNames: ['sandbox'],
    namespaced: true,
  },
  sandboxTemplate: {
    group: EXTENSIONS_GROUP,
    version: API_VERSION,
    kind: 'SandboxTemplate',
    listKind: 'SandboxTemplateList',
    plural: 'sandboxtemplates',
    singular: 'sandboxtemplate',
    shortNames: ['sandboxtemplate'],
    namespaced: true,
  },
  sandboxWarmPool: {
    group: EXTENSIONS_GROUP,
    version: API_VERSION,
    kind: 'SandboxWarmPool',
    listKind: 'SandboxWarmPoolList',
    plural: 'sandboxwarmpools',
    singular: 'sandboxwarmpool',
    shortNames: ['swp'],
    namespaced: true,
  },
  sandboxClaim: {
    group: EXTENSIONS_GROUP,
    version: API_VERSION,
    kind: 'SandboxClaim',
    listKind: 'SandboxClaimList',
    plural: 'sandboxclaims',
    singular: 'sandboxclaim',
    shortNames: ['sandboxclaim'],
    namespaced: true,
  },
  nodeInventory: {
    group: EXTENSIONS_GROUP,
    version: API_VERSION,
    kind: 'NodeInventory',
    listKind: 'NodeInventoryList',
    plural: 'nodeinventories',
    singular: 'nodeinventory',
    shortNames: [] as string[],
    namespaced: false,
  },
} as const;

/** The category every resource of this project is listed under: `kubectl get sandbox-scale` lists them all. */
export const RESOURCE_CATEGORY = 'sandbox-scale';

/** Lifecycle subresources of `sandboxes` (POST only) and their body kinds. */
export const SANDBOX_SUBRESOURCES = ['pause', 'resume', 'fork', 'snapshot'] as const;
export type SandboxSubresource = (typeof SANDBOX_SUBRESOURCES)[number];
export const SUBRESOURCE_KINDS = {
  pauseOptions: 'SandboxPauseOptions',
  resumeOptions: 'SandboxResumeOptions',
  forkOptions: 'SandboxForkOptions',
  forkResult: 'SandboxForkResult',
  snapshotOptions: 'SandboxSnapshotOptions',
  snapshotResult: 'SandboxSnapshotResult',
} as const;

/** APIService registration. */
export const API_SERVICE = {
  name: `${API_VERSION}.${SANDBOX_GROUP}`,
  namespace: 'sandbox-system',
  serviceName: 'sandbox-apiserver',
  port: 443,
  groupPriorityMinimum: 1000,
  versionPriority: 15,
} as const;

/** ClaimRequest selector keys of the L2 gateway. */
export const SELECTOR_KEYS = {
  template: 'sandbox.cocoonstack.io/template',
  net: 'sandbox.cocoonstack.io/net',
  size: 'sandbox.cocoonstack.io/size',
  /** Caller identity for the reference's ReviewAuthorizer; absent means fail closed. */
  user: 'authorization.cocoonstack.io/user',
} as const;

/** Labels stamped on synthesized Sandboxes, read path only. */
export const SANDBOX_LABELS = {
  node: 'sandbox.cocoonstack.io/node',
  phase: 'sandbox.cocoonstack.io/phase',
  claim: 'sandbox.cocoonstack.io/claim',
} as const;

/** Annotations. */
export const ANNOTATIONS = {
  /** sandboxd claim id; delete and lifecycle verbs act on this, never on the Kubernetes name. */
  claimId: 'sandbox.cocoonstack.io/claim-id',
  /**
   * On a SandboxClaim written for a fast-path delivery: the uid the delivery's claim_ref carries
   * (`fastclaim:<uid>:…`). Only claim-controller sets it, on claims it creates.
   */
  deliveryUid: 'sandbox.cocoonstack.io/delivery-uid',
  /**
   * On a SandboxClaim: the node claim-controller asked first for its sandbox, written with the
   * release finalizer while that node is asked. A hint only: the next leader lists that node
   * first after a failover; absent when admission added the finalizer.
   */
  deliveryNode: 'sandbox.cocoonstack.io/delivery-node',
  /**
   * On a SandboxClaim written for a fast-path delivery: the user the caller's token authenticated
   * as (its TokenReview), so the record says who asked. Only claim-controller sets it, on claims
   * it creates; absent on a record the orphan pass wrote from a node's list.
   */
  requestedBy: 'sandbox.cocoonstack.io/requested-by',
  /** RFC3339 UTC, second precision. */
  deadline: 'sandbox.cocoonstack.io/deadline',
  /** Delivered owner_addr (host:port), Create only. */
  address: 'sandbox.cocoonstack.io/address',
  /** Per-sandbox token, Create response only; never on reads. */
  token: 'sandbox.cocoonstack.io/token',
  /** Network lane; default `none`. */
  net: 'sandbox.cocoonstack.io/net',
  /** Non-negative integer seconds; `0` means the node default. */
  ttlSeconds: 'sandbox.cocoonstack.io/ttl-seconds',
} as const;

/** Upstream agent-sandbox labels, kept so upstream clients and tools keep working. */
export const UPSTREAM_LABELS = {
  warmPoolSandbox: 'agents.x-k8s.io/warm-pool-sandbox',
  sandboxTemplateRefHash: 'agents.x-k8s.io/sandbox-template-ref-hash',
  sandboxTemplateHash: 'agents.x-k8s.io/sandbox-template-hash',
  sandboxPodTemplateHash: 'agents.x-k8s.io/sandbox-pod-template-hash',
  launchType: 'agents.x-k8s.io/launch-type',
  createdBy: 'agents.x-k8s.io/created-by',
  claimUid: 'agents.x-k8s.io/claim-uid',
  adoptable: 'agents.x-k8s.io/adoptable',
} as const;

/** Upstream agent-sandbox annotations. */
export const UPSTREAM_ANNOTATIONS = {
  sandboxName: 'agents.x-k8s.io/sandbox-name',
  podName: 'agents.x-k8s.io/pod-name',
  sandboxTemplateRef: 'agents.x-k8s.io/sandbox-template-ref',
  propagatedLabels: 'agents.x-k8s.io/propagated-labels',
  propagatedAnnotations: 'agents.x-k8s.io/propagated-annotations',
  controllerFirstObservedAt: 'agents.x-k8s.io/controller-first-observed-at',
  v1alpha1SandboxState: 'api.agents.x-k8s.io/v1alpha1-sandbox-state',
  safeToEvict: 'cluster-autoscaler.kubernetes.io/safe-to-evict',
} as const;

/** The label key of the pool status selector: `agents.x-k8s.io/warm-pool=<pool name>`. */
export const WARM_POOL_SELECTOR_LABEL = 'agents.x-k8s.io/warm-pool';

/** `status.selector` of a SandboxWarmPool; the scale subresource and HPA read it. */
export function warmPoolSelector(poolName: string): string {
  return `${WARM_POOL_SELECTOR_LABEL}=${poolName}`;
}

/**
 * The finalizer the claim controller puts on a SandboxClaim: delete -> release the VM -> remove it.
 * Upstream relies on ownerReference cascade, which cannot reach a VM.
 */
export const CLAIM_RELEASE_FINALIZER = 'sandbox.cocoonstack.io/release';

/** Server-side-apply field managers, one per app: `sandbox-scale/<app>`. */
export const FIELD_MANAGERS = {
  claimController: 'sandbox-scale/claim-controller',
  warmpoolDriver: 'sandbox-scale/warmpool-driver',
  inventoryPublisher: 'sandbox-scale/inventory-publisher',
  sandboxApiserver: 'sandbox-scale/sandbox-apiserver',
} as const;

/**
 * The token audience claim-controller's fast path asks TokenReview for by default: callers
 * mint tokens for it (`kubectl create token --audience`), and a token minted for any other
 * service, the API server included, is refused there.
 */
export const FAST_PATH_AUDIENCE = 'sandbox-scale-fast-path';

/** Leader-election Lease names (the reference uses `cocoon-warmpool-driver`). */
export const LEASE_NAMES = {
  warmpoolDriver: 'sandbox-scale-warmpool-driver',
  claimController: 'sandbox-scale-claim-controller',
} as const;

/** Condition types. */
export const CONDITION_TYPES = {
  ready: 'Ready',
  bound: 'Bound',
  suspended: 'Suspended',
  finished: 'Finished',
  podScheduled: 'PodScheduled',
  /** SandboxWarmPool: some nodes could not be driven this tick (last good targets kept). */
  degraded: 'Degraded',
  /** SandboxWarmPool: spec.replicas is over warmpool-driver's per-pool or per-namespace limit; fewer are kept warm. */
  replicasLimited: 'ReplicasLimited',
  /** NodeInventory: the publisher could not read sandboxd and kept the last object. */
  stale: 'Stale',
  /** NodeInventory: sandboxd is cordoned (draining); the warm-pool driver sends it no targets. */
  draining: 'Draining',
} as const;

/** Condition statuses as metav1.Condition spells them. */
export const CONDITION_STATUS = { true: 'True', false: 'False', unknown: 'Unknown' } as const;
export type ConditionStatus = (typeof CONDITION_STATUS)[keyof typeof CONDITION_STATUS];

/** Condition reasons. */
export const CONDITION_REASONS = {
  /** SandboxClaim Bound=True after the node-local gateway delivered. */
  nodeLocalClaim: 'NodeLocalClaim',
  /** SandboxClaim Bound=False: no node advertises warm capacity for the claim's pool key. */
  noWarmCapacity: 'NoWarmCapacity',
  /** Sandbox Ready=True in a Create response. */
  dependenciesReady: 'DependenciesReady',
  dependenciesNotReady: 'DependenciesNotReady',
  /** Synthesized read with an empty phase. */
  unknown: 'Unknown',
  multiplePods: 'MultiplePods',
  sandboxSuspended: 'SandboxSuspended',
  podSucceeded: 'PodSucceeded',
  podFailed: 'PodFailed',
  sandboxExpired: 'SandboxExpired',
  reconcilerError: 'ReconcilerError',
  podTerminated: 'PodTerminated',
  podTerminating: 'PodTerminating',
  podNotOwned: 'PodNotOwned',
  notSuspended: 'NotSuspended',
  podStateUnknown: 'PodStateUnknown',
  templateNotFound: 'TemplateNotFound',
  warmPoolNotFound: 'WarmPoolNotFound',
  adoptionConflict: 'AdoptionConflict',
  sandboxCreatePending: 'SandboxCreatePending',
  invalidMetadata: 'InvalidMetadata',
  envVarsInjectionRejected: 'EnvVarsInjectionRejected',
  volumeClaimTemplatesError: 'VolumeClaimTemplatesError',
  claimExpired: 'ClaimExpired',
  sandboxMissing: 'SandboxMissing',
  sandboxNotReady: 'SandboxNotReady',
  /** NodeInventory Stale=True: sandboxd did not answer the publisher. */
  sandboxdUnreachable: 'SandboxdUnreachable',
  /** NodeInventory Draining=True: sandboxd reports draining in GET /v1/info. */
  nodeDraining: 'NodeDraining',
} as const;

/** Size classes. */
export const SIZE_CLASSES = ['small', 'medium', 'large'] as const;
export type SizeClass = (typeof SIZE_CLASSES)[number];
export const DEFAULT_SIZE: SizeClass = 'small';

/** Net lanes. Any other string passes through unvalidated. */
export const NET_LANES = { none: 'none', egress: 'egress' } as const;
export const DEFAULT_NET = NET_LANES.none;

/** The namespace an inventory entry name without a `/` belongs to. */
export const DEFAULT_NAMESPACE = 'default';

/** Fixed numbers that more than one app needs. */
export const LIMITS = {
  fanOutConcurrency: 16,
  watchPollIntervalMs: 1000,
  watchBufferEvents: 64,
  recordTimeoutMs: 10_000,
  sandboxdTimeoutMs: 10_000,
  warmPoolSyncIntervalMs: 5000,
  warmPoolPutTimeoutMs: 10_000,
  warmPoolPutConcurrency: 16,
  inventorySyncTimeoutMs: 120_000,
  inventoryPublishIntervalMs: 30_000,
} as const;

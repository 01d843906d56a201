// Public API of @sandbox-scale/kube-runtime: named exports only.

// config and logging
export { ConfigError, isConfigError, parseFlags, booleanFlag, jsonFlag, renderHelp, flagName, envName, isHelp } from './config/flags';
export type { FlagDoc, ParseFlagsOptions, HelpRequested } from './config/flags';
export { managerFlagShape, ManagerFlagsSchema, durationFlag, bindAddressFlag, parseDuration } from './config/manager-flags';
export type { ManagerFlags } from './config/manager-flags';
export { managerOptionsFromFlags, podNamespace } from './config/manager-options';
export type { ManagerWiring } from './config/manager-options';
export { createLogger, REDACTED_PATHS } from './log/logger';
export { runApp, EXIT_CODES } from './app/run-app';
export { freezeIntrinsics, intrinsicsFrozen } from './app/freeze-intrinsics';
export type { AppConfig, AppContext, AppDefinition, AppIo, ExitCode, RunningApp } from './app/run-app';
export { claimRefKeyInput, fleetTokenInput, kubeConfigInput, readClaimRefKey, readFleetToken } from './app/flag-input';
export type { FlagInput } from './app/flag-input';
export type { Logger, LoggerOptions } from './log/logger';

// client: kubeconfig, raw requests, SSA, error predicates
export { loadKubeConfig, KubeConfigError, isKubeConfigError } from './client/kube-config';
export { kubeRequest } from './client/kube-request';
export type { KubeRequest } from './client/kube-request';
export {
  kubeTransport,
  kubeApiClient,
  kubeAuthorization,
  kubeTransportStats,
  closeKubeTransport,
  countConnections,
} from './client/kube-transport';
export type { ConnectionCounters, KubeTransport, KubeTransportStats, TransportStats } from './client/kube-transport';
export { ResourceClient } from './client/resource-client';
export type { ListQuery, WriteOptions } from './client/resource-client';
export { applyObject, applyStatus, InvalidApplyObjectError, isInvalidApplyObject } from './client/apply';
export type { ApplyBody, ApplyOptions } from './client/apply';
export { resolveResource, UnknownKindError, isUnknownKind } from './client/discovery';
export { apiStatusOf, isNotFound, isConflict, isAlreadyExists, isGone, isForbidden, ignoreNotFound } from './client/api-errors';
export type { ApiStatus } from './client/api-errors';
export {
  resourcePath,
  resourceName,
  apiVersionOf,
  ConfigMapResource,
  SecretResource,
  APIServiceResource,
  NamespaceResource,
  LeaseResource,
  EventResource,
  CrdResource,
} from './client/resource';
export type { KubeResource, PathOptions } from './client/resource';
export {
  ObjectMetaSchema,
  OwnerReferenceSchema,
  KubeObjectSchema,
  parseUntyped,
  metaOf,
  keyFieldsOf,
  withoutManagedFields,
  objectKey,
} from './client/object-meta';
export type { KubeObject, ObjectMeta, OwnerReference, UntypedObject } from './client/object-meta';

// delegated authentication and authorization
export {
  DelegatedAuth,
  DEFAULT_TOKEN_REVIEWS_IN_FLIGHT,
  AuthUnavailableError,
  isAuthUnavailable,
  ReviewsBusyError,
  isReviewsBusy,
  userOfTokenReview,
  decisionOfSar,
  sarSpecOf,
} from './auth/delegated-auth';
export type {
  UserInfo,
  ResourceAttributes,
  NonResourceAttributes,
  AccessAttributes,
  Decision,
  DelegatedAuthOptions,
} from './auth/delegated-auth';
export { TtlLru } from './auth/ttl-lru';

// informer
export { Informer, createInformer } from './informer/informer';
export type { InformerOptions, InformerHandlers, ObjectRef } from './informer/informer';
export { KubeListWatcher, WatchFailedError, isWatchFailed } from './informer/list-watcher';
export type { ListWatcher, ListResult, WatchRequest, WatchEnd, WatchEventType, ListWatchScope } from './informer/list-watcher';
export { describeParseError } from './informer/parse-failure';
export { deepFreeze } from './informer/object-store';
export type { ParseFailure } from './informer/parse-failure';
export { Backoff } from './informer/backoff';

// reconcile, controller, builder
export { requestKey, parseRequestKey } from './reconcile/reconciler';
export type { Reconciler, ReconcileRequest, ReconcileResult, ReconcileContext } from './reconcile/reconciler';
export { TerminalError, isTerminalError } from './reconcile/terminal-error';
export { Controller } from './controller/controller';
export type { ControllerOptions, Source } from './controller/controller';
export { WorkQueue } from './controller/work-queue';
export type { WorkQueueOptions } from './controller/work-queue';
export { ItemBackoff } from './controller/rate-limiter';
export type { ItemBackoffOptions } from './controller/rate-limiter';
export type { ReconcileOutcome } from './controller/controller-metrics';
export { controller, ControllerBuilder } from './builder';
export type { ControllerSpec } from './builder';
export { informerSource } from './handler/informer-source';
export type { InformerSourceOptions } from './handler/informer-source';
export { enqueueObject, enqueueOwner } from './handler/map-functions';
export type { MapFunction } from './handler/map-functions';
export { generationChanged, labelsChanged, and, or } from './predicate/predicate';
export type { Predicate } from './predicate/predicate';
export { OwnWrites } from './predicate/own-writes';
export type { OwnWritesOptions } from './predicate/own-writes';
export type { Runnable } from './runnable';

// leader election
export { LeaderElector, createLeaderElector, defaultIdentity } from './leader/leader-elector';
export type { LeaderElectorOptions, LeaderElectionTimings } from './leader/leader-elector';
export { KubeLeaseClient } from './leader/lease-client';
export type { LeaseClient } from './leader/lease-client';
export { LeaseSchema } from './leader/lease';
export type { Lease, LeaseRecord } from './leader/lease';

// events
export { EventRecorder, createEventRecorder, involvedObjectOf } from './events/event-recorder';
export type { EventRecorderOptions, EventInput, InvolvedObject } from './events/event-recorder';
export { EventAggregator } from './events/event-aggregator';
export type { AggregatorOptions } from './events/event-aggregator';
export { KubeEventSink } from './events/event-sink';
export type { EventSink, EventBody, EventSeries } from './events/event-sink';

// health, metrics, manager
export { METRICS_ACCESS, ProbeServer, authorizeScrape } from './health/probe-server';
export {
  DEFAULT_SERVER_LIMITS,
  closeServer,
  decodeSegment,
  guardRequests,
  limitServer,
  readBounded,
  requestUrl,
} from './http/guarded-server';
export type { FailureWriter, GuardOptions, RequestHandler, ServerLimits } from './http/guarded-server';
export { DEFAULT_INFLIGHT_CAPS, InflightLimits } from './http/inflight-limits';
export { readRequestBody } from './http/request-body';
export type { RequestBodyOptions } from './http/request-body';
export { sendJson, sendKubeStatus } from './http/json-reply';
export { postJson } from './http/post-json';
export type { JsonReply, PostFailure, PostJsonOptions } from './http/post-json';
export { selfSignedCert } from './http/self-signed-cert';
export {
  CertificateKeeper,
  KeptObjectsSchema,
  KEPT_BY_LABEL,
  ROTATE_CA_ANNOTATION,
  ROTATE_KEY_ANNOTATION,
  type KeptObjects,
  type KeeperTimes,
  type CertificateKeeperOptions,
} from './certs/certificate-keeper';
export {
  CERT_POLL_MS,
  WatchedFiles,
  fixedPair,
  isCertBundle,
  keyMatchesCert,
  watchCaFile,
  followCaFile,
  serveWatched,
  watchServingFiles,
  type ServingPair,
  type WatchedFilesOptions,
} from './certs/watched-files';
export { followClaimRefKey, type ClaimRefKeyFollower, type FollowClaimRefKeyOptions } from './certs/claim-ref-key-file';
export { createCA, signLeaf, certFacts, type CertPair, type LeafOptions, type CertFacts } from './certs/pki';
export type { SelfSignedCert, SelfSignedCertOptions } from './http/self-signed-cert';
export type { StatusReplyOptions } from './http/json-reply';
export type { InflightCaps } from './http/inflight-limits';
export { MemoryBudget, type MemoryBudgetCaps, type BudgetLease } from './http/memory-budget';
export type { ListenerRole, MetricsAuthenticator, ProbeServerOptions } from './health/probe-server';
export { CheckSet, renderChecks } from './health/checks';
export type { Check, CheckResult } from './health/checks';
export { parseBindAddress, BindAddressError, isBindAddressError } from './health/bind-address';
export type { BindAddress } from './health/bind-address';
export { counter, gauge, histogram } from './metrics/metric-factory';
export { BuildStampSchema, registerBuildInfo, type BuildStamp } from './metrics/build-info';
export { leaderGauge } from './metrics/leader-gauge';
export { Manager } from './manager';
export type { ManagerOptions, LeaderElectionConfig, Cache, MetricsAuthMode } from './manager';
export {
  LeaderElectionLostError,
  RunnableFailedError,
  ShutdownTimeoutError,
  isLeaderElectionLost,
  isRunnableFailed,
  isShutdownTimeout,
} from './manager-errors';
export { setupSignalHandler } from './signals';
export { untilAborted } from './abort';

// time
export { LOOP_WAIT, systemNow, toMicroTime, jitter, realTimers } from './time';
export type { Now, Timers } from './time';

// replicas of one app that find each other through their Service and call each other
export { ownerOf } from './peers/rendezvous';
export { PeerSet, peerId, peersOfSlice, startPeerInformer, EndpointSliceSchema, ENDPOINT_SLICE_RESOURCE } from './peers/peer-set';
export type { EndpointSlice, Membership } from './peers/peer-set';
export { PeerClient, PeerUnreachableError, isPeerUnreachable, PeerReplySchema, statusErrorOfReply } from './peers/peer-client';
export type { PeerClientOptions } from './peers/peer-client';
export { PeerIdentity } from './peers/peer-identity';

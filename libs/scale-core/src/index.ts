// Public API of scale-core: pure logic of the scaling layer, no I/O. Named exports only.

export {
  API_SERVICE,
  API_VERSION,
  ANNOTATIONS,
  CLAIM_RELEASE_FINALIZER,
  CONDITION_REASONS,
  CONDITION_STATUS,
  CONDITION_TYPES,
  DEFAULT_NAMESPACE,
  DEFAULT_NET,
  DEFAULT_SIZE,
  EXTENSIONS_API_VERSION,
  EXTENSIONS_GROUP,
  FAST_PATH_AUDIENCE,
  FIELD_MANAGERS,
  LEASE_NAMES,
  LIMITS,
  NET_LANES,
  RESOURCE_CATEGORY,
  RESOURCES,
  SANDBOX_API_VERSION,
  SANDBOX_GROUP,
  SANDBOX_LABELS,
  SANDBOX_SUBRESOURCES,
  SELECTOR_KEYS,
  SIZE_CLASSES,
  SUBRESOURCE_KINDS,
  UPSTREAM_ANNOTATIONS,
  UPSTREAM_LABELS,
  WARM_POOL_SELECTOR_LABEL,
  warmPoolSelector,
} from './constants';
export type { ConditionStatus, SandboxSubresource, SizeClass } from './constants';

export { findInCauseChain, SandboxScaleError } from './errors/base';
export {
  ClaimRoutingNotConfiguredError,
  isClaimRoutingNotConfigured,
  isFallback,
  isNoWarmCapacity,
  NO_WARM_CAPACITY_RETRY_AFTER_SECONDS,
  NoNodeCapacityError,
  noWarmCapacityOf,
  NoWarmCapacityError,
} from './errors/capacity-errors';
export {
  AlreadyExistsError,
  BadRequestError,
  ConflictError,
  InvalidError,
  isAlreadyExistsError,
  isBadRequestError,
  isConflictError,
  isInvalidError,
  isNotFoundError,
  NotFoundError,
  STATUS_REASON_CODES,
  StatusError,
  statusErrorOf,
} from './errors/status-errors';
export type { GroupKind, GroupResource, StatusCause, StatusDetails, StatusReason } from './errors/status-errors';
export { INTERNAL_ERROR_MESSAGE, statusForError } from './errors/status-for-error';
export type { KubeStatus } from './errors/status-for-error';

export { compareQuantities, isZeroQuantity, parseQuantity, QuantityParseError, tryParseQuantity } from './quantity/quantity';
export type { Quantity } from './quantity/quantity';
export { sizeClassForContainers } from './pool-key/size-class';
export type { ResourceContainer } from './pool-key/size-class';
export { comparePoolKeys, normalizePoolKey, poolKeyFor, poolKeyId, poolKeyMatches } from './pool-key/pool-key';
export type { PoolKey, PoolKeyLike } from './pool-key/pool-key';
export { netOfTemplate, poolKeyForSandbox, poolKeyForTemplate } from './pool-key/pool-key-of';
export { addressIPs, splitHostPort } from './address/address-ips';
export { fnv1a32, fnv1a64, nameHash } from './hash/fnv1a';
export {
  DNS1123_LABEL,
  DNS1123_LABEL_FMT,
  DNS1123_LABEL_MAX_LENGTH,
  DNS1123_SUBDOMAIN,
  DNS1123_SUBDOMAIN_FMT,
  DNS1123_SUBDOMAIN_MAX_LENGTH,
  isDns1123Label,
  isDns1123Subdomain,
} from './names/dns1123';
export { SANDBOX_UID_NAMESPACE, sandboxUid, uuidV5 } from './hash/stable-uid';

export { ConditionSchema, ObjectMetaSchema, QUANTITY_PATTERN, QuantitySchema } from './schemas/meta';
export type { Condition, ObjectMeta } from './schemas/meta';
export { INVENTORY_SEQ_ANNOTATION, MAX_NOTICE_BYTES, NODE_NOTICE_PATH, NodeNoticeSchema } from './schemas/node-notice';
export type { NodeNotice, NoticeOutcome } from './schemas/node-notice';
export { ContainerSchema, PodTemplateSchema } from './schemas/pod-template';
export type { Container, PodTemplate } from './schemas/pod-template';
export { SandboxSchema, SandboxSpecSchema, SandboxStatusSchema } from './schemas/sandbox';
export type { Sandbox, SandboxSpec, SandboxStatus } from './schemas/sandbox';
export { SandboxTemplateSchema, SandboxTemplateSpecSchema } from './schemas/sandbox-template';
export type { SandboxTemplate, SandboxTemplateSpec } from './schemas/sandbox-template';
export {
  COLD_START_POLICIES,
  RecordedPoolKeySchema,
  SandboxWarmPoolSchema,
  SandboxWarmPoolSpecSchema,
  SandboxWarmPoolStatusSchema,
} from './schemas/sandbox-warm-pool';
export type {
  ColdStartPolicy,
  RecordedPoolKey,
  SandboxWarmPool,
  SandboxWarmPoolSpec,
  SandboxWarmPoolStatus,
} from './schemas/sandbox-warm-pool';
export { ClaimedSandboxSchema, SandboxClaimSchema, SandboxClaimSpecSchema, SandboxClaimStatusSchema } from './schemas/sandbox-claim';
export type { ClaimedSandbox, SandboxClaim, SandboxClaimSpec, SandboxClaimStatus } from './schemas/sandbox-claim';
export {
  ignoredPodTemplateFields,
  ignoredPodTemplateMessage,
  isEmptyValue,
  REFUSAL_REASONS,
  refusedClaimFields,
  refusedSandboxFields,
  refusedTemplateFields,
  UPSTREAM_FIELDS,
} from './upstream-fields/upstream-fields';
export type { PodTemplateUse, RefusalReason, RefusedField, UpstreamField, UpstreamKind } from './upstream-fields/upstream-fields';
export {
  INVENTORY_OBJECT_MAX_BYTES,
  INVENTORY_ROW_FIELDS,
  INVENTORY_ROW_MAX_CHARS,
  InventoryEntrySchema,
  inventoryObjectName,
  inventoryRow,
  InventoryRowSchema,
  NodeInventorySchema,
  PoolCapacitySchema,
} from './schemas/node-inventory';
export type { InventoryEntry, NodeInventory, PoolCapacity } from './schemas/node-inventory';
export { formatFieldPath, issuesText, ObjectValidationError, parseObject, tryParseObject } from './schemas/parse-object';
export type { FieldIssue, ParseResult } from './schemas/parse-object';

export { buildCrd, buildCrds, CRD_SOURCES } from './crds/build-crds';
export type { CustomResourceDefinition } from './crds/build-crds';
export { CRD_OUTPUT_DIR, renderCrdFiles } from './crds/render-crds';
export type { RenderedFile } from './crds/render-crds';
export { toStructuralSchema, UnstructuralSchemaError } from './crds/structural-schema';

export {
  formatOwnerRef,
  formatOwnerRefPrefix,
  InvalidOwnerRefError,
  isInvalidOwnerRef,
  isUidOwner,
  OWNER_KINDS,
  parseOwnerRef,
  provenOwnerOf,
  sameOwner,
  servedNameOf,
  servedObjectName,
} from './claim-ref/owner-ref';
export { InvalidOwnerRefKeyError, isInvalidOwnerRefKey, OwnerRefKey } from './claim-ref/owner-ref-key';
export type { LegacyOwner, OwnerKind, ParsedOwnerRef, SandboxOwner } from './claim-ref/owner-ref';

export { formatRfc3339Seconds, normalizeTimestamp } from './synthesis/rfc3339';
export { SANDBOX_PHASES, sandboxPhaseOf } from './synthesis/sandbox-phase';
export type { SandboxPhase } from './synthesis/sandbox-phase';
export {
  claimRefName,
  compareByNamespaceName,
  entryFingerprint,
  readyConditionFor,
  SANDBOX_SELECTABLE_FIELDS,
  sandboxFieldSet,
  sandboxLabelsFor,
  splitEntryName,
  synthesizeSandbox,
} from './synthesis/synthesize-sandbox';
export type { EntryLike, SandboxCondition, ServedSandbox, SynthesizeOptions } from './synthesis/synthesize-sandbox';

export { randomIndex, seededRng } from './node-choice/random';
export type { Rng } from './node-choice/random';
export { inventoryName, pickPowerOfTwo, warmCandidates } from './node-choice/warm-candidates';
export type { InventoryLike, WarmCandidate } from './node-choice/warm-candidates';
export { CapacityLedger } from './node-choice/capacity-ledger';

export { ClaimIndex, estimateClaimIndexEntryBytes, InvalidClaimIndexOptionsError } from './claim-index/claim-index';
export type { ClaimIndexOptions, ClaimLocation } from './claim-index/claim-index';

export { SelectorParseError } from './selectors/selector-parse-error';
export { lexLabelSelector } from './selectors/label-lexer';
export type { LabelToken, LabelTokenType } from './selectors/label-lexer';
export { validateLabelKey, validateLabelValue } from './selectors/label-validation';
export {
  EVERYTHING_LABEL_SELECTOR,
  formatLabelRequirement,
  formatLabelSelector,
  labelSelectorMatches,
  parseLabelSelector,
  requirementProblem,
} from './selectors/label-selector';
export type { LabelOperator, LabelRequirement, LabelSelector } from './selectors/label-selector';
export {
  assertFieldsSupported,
  escapeFieldValue,
  fieldSelectorMatches,
  formatFieldRequirement,
  formatFieldSelector,
  parseFieldSelector,
  requiresExactMatch,
} from './selectors/field-selector';
export type { FieldOperator, FieldRequirement, FieldSelector } from './selectors/field-selector';

export { backoffDelayMs, InvalidBackoffOptionsError, retry, sleep } from './retry/retry';
export { withDeadline } from './retry/deadline';
export { InvalidRateError, TokenBucket } from './rate/token-bucket';
export type { TokenBucketOptions } from './rate/token-bucket';
export type { BackoffOptions, RetryOptions, Sleep, SleepOptions, TimerSource } from './retry/retry';
export { RENEWAL_WINDOW, leaseRenewAtMs, renewalFraction } from './lease/renewal';

export {
  assertNoPrototypeKeys,
  findPrototypeKey,
  isJsonSyntaxError,
  isPrototypeKey,
  isPrototypeKeyError,
  JsonSyntaxError,
  mayHoldPrototypeKey,
  parseOwn,
  parseUntrustedJson,
  PROTOTYPE_KEYS,
  PrototypeKeyError,
  withoutPrototypes,
} from './json/prototype-keys';
export { invalidPromotedName, PROMOTED_PREFIX, promotedTemplateName } from './pool-key/promoted-template';

export { ArchiveError, encodeTarHeader, isArchiveError, MAX_TAR_META_BYTES, TAR_BLOCK, TAR_END, tarPadding } from './tar/tar-format';
export type { TarEntry, TarEntryType, TarHeaderEntry } from './tar/tar-format';
export { readTar } from './tar/tar-reader';
export type { TarItem } from './tar/tar-reader';

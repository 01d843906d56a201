// Public API of @sandbox-scale/sdk: named exports only.
export { SandboxClient } from './client';
export type { SandboxClientOptions, ClaimOptions } from './client';
export { Sandbox } from './sandbox';
export type { SandboxRef, ForkChild, SnapshotInfo, SnapshotListItem, SandboxStats, PromoteResult } from './sandbox';
export type { CallOptions } from './deadline';
export type { FastPathOptions } from './fast-path';
export { DEFAULT_FAST_PATH_SERVICE, locateFastPath, fastPathToken } from './fast-path';
export { userKubeConfig, contextNamespace } from './kube-context';
export type { ContextOptions } from './kube-context';
export { boundSandboxOf, claimPhase } from './claim-status';
export type { BoundSandbox, ClaimObject, ClaimPhase } from './claim-status';
export type { SandboxAction } from './kube-api';
export {
  SdkError,
  ApiError,
  ForbiddenError,
  UnauthorizedError,
  NotFoundError,
  AlreadyExistsError,
  UnavailableError,
  ClaimTimeoutError,
  ClaimFailedError,
  FastPathUnavailableError,
  AbortedError,
  ClaimOutcomeUnknownError,
  isSdkError,
  isApiError,
  isForbidden,
  isUnauthorized,
  isNotFound,
  isAlreadyExists,
  isUnavailable,
  isClaimTimeout,
  isClaimFailed,
  isFastPathUnavailable,
  isAborted,
  isClaimOutcomeUnknown,
} from './errors';
export type { RequestTarget } from './errors';

// Public API of @sandbox-scale/sdk: named exports only.
export { SandboxClient } from './client';
export { SDK_VERSION } from './version';
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
export { SandboxObjectSchema } from './listing';
export type { SandboxObject } from './listing';
export type { SandboxAction } from './kube-api';
export type { ExecOptions, ExecResult } from './sandbox-exec';
export { SandboxFiles } from './sandbox-files';
export type { FileEntry, FileInfo, ReadOptions, WriteOptions } from './sandbox-files';
export type { PortForward, ListenOptions } from './port-forward';
export { packDirectory, extractTar } from './tar';
export type { PackOptions, ExtractOptions, ExtractResult } from './tar';
export {
  SdkError,
  ApiError,
  ForbiddenError,
  UnauthorizedError,
  NotFoundError,
  AlreadyExistsError,
  UnavailableError,
  BadRequestError,
  TooLargeError,
  DeadlineExceededError,
  InvalidArgumentError,
  WrongFileKindError,
  ArchiveError,
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
  isBadRequest,
  isTooLarge,
  isDeadlineExceeded,
  isInvalidArgument,
  isWrongFileKind,
  isArchiveError,
  isClaimTimeout,
  isClaimFailed,
  isFastPathUnavailable,
  isAborted,
  isClaimOutcomeUnknown,
} from './errors';
export type { RequestTarget } from './errors';

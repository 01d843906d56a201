// e2b's protocols as e2b's SDKs speak them: the control plane's REST shapes, and envd's Connect
// services (generated from proto/) with its REST files, served over a guest a host provides.
export {
  NewSandboxSchema,
  ConnectBodySchema,
  TimeoutBodySchema,
  PauseBodySchema,
  ForkBodySchema,
  SnapshotBodySchema,
  errorBody,
  parseListQuery,
  QueryError,
  isQueryError,
  MAX_LIST_LIMIT,
} from './control-plane';
export type {
  NewSandbox,
  SandboxReply,
  SandboxDetail,
  SandboxState,
  SandboxMetric,
  SnapshotInfo,
  ErrorBody,
  ListFilter,
} from './control-plane';
export { boundaryOf, parseMultipart, MultipartError, isMultipartError } from './multipart';
export type { FilePart } from './multipart';
export { serveControlPlane, sandboxReply, sandboxDetail, E2bApiError, isE2bApiError, DEFAULT_TIMEOUT_SECONDS } from './control-plane-api';
export type { E2bBackend, E2bSandbox, CreateRequest, ControlPlaneRequest, ControlPlaneReply, ServedIdentity } from './control-plane-api';
export { envdHandler, MAX_RPC_MESSAGE_BYTES as ENVD_MAX_MESSAGE_BYTES } from './envd/envd-handler';
export type { EnvdHandlerOptions } from './envd/envd-handler';
export { ENVD_PORT, GuestError, isGuestError } from './envd/guest';
export type { EnvdGuest, GuestChild, StartSpec, WatchEventType, GuestErrorCode, FileFacts as GuestFileFacts } from './envd/guest';
export { EnvdState } from './envd/envd-state';
export { DEFAULT_USER } from './envd/user';
export { Process, Signal } from './gen/process/process_pb';
export { Filesystem, FileType, EventType } from './gen/filesystem/filesystem_pb';

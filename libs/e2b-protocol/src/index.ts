// e2b's protocols as e2b's SDKs speak them: the control plane's REST shapes and envd's
// Connect-JSON RPCs and REST files. Pure translation: the servers that use it only wire it.
export {
  encodeEnvelope,
  messageEnvelope,
  endStreamEnvelope,
  EnvelopeReader,
  EnvelopeError,
  isEnvelopeError,
  FLAG_MESSAGE,
  FLAG_END_STREAM,
} from './connect-envelope';
export type { Envelope } from './connect-envelope';
export { CONNECT_CODES, ConnectError, isConnectError, connectHttpStatus, connectCodeOfStatus } from './connect-errors';
export type { ConnectCode } from './connect-errors';
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
export {
  StartRequestSchema,
  ConnectRequestSchema,
  SendSignalRequestSchema,
  SendInputRequestSchema,
  CloseStdinRequestSchema,
  ProcessSelectorSchema,
  startEvent,
  dataEvent,
  keepaliveEvent,
  endEvent,
  exitStatus,
} from './envd-process';
export type { StartRequest, ProcessConfig, ProcessEvent } from './envd-process';
export { PathRequestSchema, ListDirRequestSchema, MoveRequestSchema, entryInfo, permissionString, writtenEntry } from './envd-filesystem';
export type { FileFacts } from './envd-filesystem';
export { boundaryOf, parseMultipart, MultipartError, isMultipartError } from './multipart';
export type { FilePart } from './multipart';
export { serveControlPlane, sandboxReply, sandboxDetail, E2bApiError, isE2bApiError, DEFAULT_TIMEOUT_SECONDS } from './control-plane-api';
export type { E2bBackend, E2bSandbox, CreateRequest, ControlPlaneRequest, ControlPlaneReply, ServedIdentity } from './control-plane-api';
export { serveEnvd, ProcessTable, MAX_RPC_MESSAGE_BYTES } from './envd-api';
export type { EnvdBackend, EnvdRequest, EnvdReply, ExecRun } from './envd-api';
export { envdHandler, MAX_RPC_MESSAGE_BYTES as ENVD_MAX_MESSAGE_BYTES } from './envd/envd-handler';
export type { EnvdHandlerOptions } from './envd/envd-handler';
export { GuestError, isGuestError } from './envd/guest';
export type { EnvdGuest, GuestChild, StartSpec, WatchEventType, GuestErrorCode, FileFacts as GuestFileFacts } from './envd/guest';
export { EnvdState } from './envd/envd-state';
export { DEFAULT_USER } from './envd/user';
export { Process, Signal } from './gen/process/process_pb';
export { Filesystem, FileType, EventType } from './gen/filesystem/filesystem_pb';

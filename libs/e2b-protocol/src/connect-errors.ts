/**
 * Connect's error codes, as envd answers them and e2b's SDKs read them: a unary call's error is
 * a non-200 status with `{"code":"not_found","message":…}` (the SDK's `exists()` and `makeDir()`
 * depend on the string code); a stream's is inside its end-stream envelope.
 */
export const CONNECT_CODES = [
  'canceled',
  'unknown',
  'invalid_argument',
  'deadline_exceeded',
  'not_found',
  'already_exists',
  'permission_denied',
  'resource_exhausted',
  'failed_precondition',
  'aborted',
  'out_of_range',
  'unimplemented',
  'internal',
  'unavailable',
  'data_loss',
  'unauthenticated',
] as const;
export type ConnectCode = (typeof CONNECT_CODES)[number];

/** The HTTP status of a unary error, as the Connect protocol maps each code. */
const HTTP_STATUS: Record<ConnectCode, number> = {
  canceled: 499,
  unknown: 500,
  invalid_argument: 400,
  deadline_exceeded: 504,
  not_found: 404,
  already_exists: 409,
  permission_denied: 403,
  resource_exhausted: 429,
  failed_precondition: 400,
  aborted: 409,
  out_of_range: 400,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  data_loss: 500,
  unauthenticated: 401,
};

export function connectHttpStatus(code: ConnectCode): number {
  return HTTP_STATUS[code];
}

/** An error an envd call ends with: its Connect code and a message for the caller. */
export class ConnectError extends Error {
  override readonly name = 'ConnectError';
  constructor(
    readonly code: ConnectCode,
    message: string,
  ) {
    super(message);
  }

  toJSON(): { code: ConnectCode; message: string } {
    return { code: this.code, message: this.message };
  }
}

export function isConnectError(err: unknown): err is ConnectError {
  return err instanceof ConnectError;
}

/** The Connect code a Kubernetes API status stands for, so a refusal reads the same through e2b. */
export function connectCodeOfStatus(status: number): ConnectCode {
  if (status === 400 || status === 422) return 'invalid_argument';
  if (status === 401) return 'unauthenticated';
  if (status === 403) return 'permission_denied';
  if (status === 404) return 'not_found';
  if (status === 409) return 'already_exists';
  if (status === 413) return 'resource_exhausted';
  if (status === 429) return 'resource_exhausted';
  if (status === 499) return 'canceled';
  if (status === 501) return 'unimplemented';
  if (status === 503) return 'unavailable';
  if (status === 504) return 'deadline_exceeded';
  return 'internal';
}

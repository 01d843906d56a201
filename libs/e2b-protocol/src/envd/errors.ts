import { Code, ConnectError } from '@connectrpc/connect';
import { isGuestError, type GuestErrorCode } from './guest';

const CODE_OF: Record<GuestErrorCode, Code> = {
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  invalid_argument: Code.InvalidArgument,
  permission_denied: Code.PermissionDenied,
  resource_exhausted: Code.ResourceExhausted,
  failed_precondition: Code.FailedPrecondition,
};

/**
 * A guest's failure as the Connect error e2b's SDKs read (`exists()` and `makeDir()` depend on
 * the code); anything else is left to the Connect handler, which answers `internal` without
 * the detail.
 */
export function connectErrorOf(err: unknown): unknown {
  return isGuestError(err) ? new ConnectError(err.message, CODE_OF[err.code]) : err;
}

export async function guarded<T>(op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    throw connectErrorOf(err);
  }
}

import { isPrototypeKeyError, parseUntrustedJson } from '@sandbox-scale/scale-core';

/** An HTTP answer other than success: status plus the daemon's `{"error"}` text. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

export function isApiError(err: unknown): err is ApiError {
  return err instanceof Error && err.name === 'ApiError';
}

export const badBody = (detail?: string): ApiError =>
  new ApiError(400, detail ? `invalid request body: ${detail}` : 'invalid request body');

/**
 * A request body as JSON: `400 invalid request body` for text that is not JSON, and for a key that
 * names a prototype at any depth (`__proto__`, `constructor`, `prototype`), which no field of the
 * API is and which this JavaScript node must never walk into.
 */
export function parseBodyJson(text: string): unknown {
  try {
    return parseUntrustedJson(text);
  } catch (err) {
    throw badBody(isPrototypeKeyError(err) ? `${JSON.stringify(err.field)} names a prototype` : undefined);
  }
}
export const unknownSandbox = (): ApiError => new ApiError(404, 'unknown sandbox');
export const unknownCheckpoint = (): ApiError => new ApiError(404, 'unknown checkpoint');
export const unknownTemplate = (): ApiError => new ApiError(404, 'unknown template');
export const quotaReached = (detail: string): ApiError => new ApiError(429, `node claim quota reached: ${detail}`);
export const provisioningFailed = (): ApiError => new ApiError(500, 'provisioning failed');

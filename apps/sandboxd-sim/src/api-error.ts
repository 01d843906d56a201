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
export const unknownSandbox = (): ApiError => new ApiError(404, 'unknown sandbox');
export const unknownCheckpoint = (): ApiError => new ApiError(404, 'unknown checkpoint');
export const unknownTemplate = (): ApiError => new ApiError(404, 'unknown template');
export const quotaReached = (detail: string): ApiError => new ApiError(429, `node claim quota reached: ${detail}`);
export const provisioningFailed = (): ApiError => new ApiError(500, 'provisioning failed');

/** The one error type of the HTTP layer; the error middleware turns it into the envelope of docs/api.md#envelope-and-errors. */
export type ErrorCode =
  | 'INVALID_PARAMETER'
  | 'INVALID_JSON'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'METHOD_NOT_ALLOWED'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'RATE_LIMITED'
  | 'INTERNAL'
  | 'UNAVAILABLE'
  | 'AUTH_REQUIRED'
  | 'AUTH_INVALID'
  | 'AUTH_EXPIRED'
  | 'AUTH_REPLAYED'
  // The next four only come from Node's HTTP parser, before a request reaches Koa (see http/client-errors.ts).
  | 'BAD_REQUEST'
  | 'REQUEST_TIMEOUT'
  | 'EXPECTATION_FAILED'
  | 'HEADERS_TOO_LARGE';

/** The HTTP status of each code; the OpenAPI document groups the codes by it. */
export const STATUS: Readonly<Record<ErrorCode, number>> = {
  INVALID_PARAMETER: 400,
  INVALID_JSON: 400,
  NOT_FOUND: 404,
  CONFLICT: 409,
  METHOD_NOT_ALLOWED: 405,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
  AUTH_REQUIRED: 401,
  AUTH_INVALID: 401,
  AUTH_EXPIRED: 401,
  AUTH_REPLAYED: 401,
  BAD_REQUEST: 400,
  REQUEST_TIMEOUT: 408,
  EXPECTATION_FAILED: 417,
  HEADERS_TOO_LARGE: 431,
};

/** Every code, for documents that list them. */
export const ERROR_CODES = Object.keys(STATUS) as ErrorCode[];

export interface ErrorDetail {
  field: string;
  message: string;
}

export interface AppErrorOptions {
  details?: ErrorDetail[];
  /** Response headers that belong to this error (Allow, Retry-After). */
  headers?: Record<string, string>;
  cause?: unknown;
}

export class AppError extends Error {
  override name = 'AppError';
  readonly status: number;
  readonly details: ErrorDetail[] | undefined;
  readonly headers: Record<string, string>;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: AppErrorOptions = {},
  ) {
    super(message, { cause: options.cause });
    this.status = STATUS[code];
    this.details = options.details;
    this.headers = options.headers ?? {};
  }
}

/** 503 with a Retry-After, for anything that a later retry can fix. */
export function unavailable(message: string, retryAfterSeconds = 1, cause?: unknown): AppError {
  return new AppError('UNAVAILABLE', message, {
    headers: { 'Retry-After': String(retryAfterSeconds) },
    cause,
  });
}

/**
 * The closed error catalogue of the service description, section 7, with `request_timeout` (408,
 * answered by the HTTP server before a request reaches the app). Every error response carries
 * one of these codes with its status; `error-catalogue.test.ts` keeps this table, the `ErrorCode`
 * enum of spec/openapi.yaml and docs/errors.md identical.
 */
export const ERROR_CATALOGUE = {
  validation_error: { status: 400, meaning: 'body or query failed validation' },
  bad_request: { status: 400, meaning: 'malformed JSON or missing required field' },
  unauthorized: { status: 401, meaning: 'missing or invalid Authorization header' },
  forbidden: { status: 403, meaning: 'valid key, insufficient role' },
  not_found: { status: 404, meaning: 'resource does not exist (or belongs to another lender)' },
  request_timeout: { status: 408, meaning: 'the request did not arrive in time' },
  duplicate_request: { status: 409, meaning: 'an Idempotency-Key was reused with a different payload' },
  unprocessable: { status: 422, meaning: 'valid request that cannot be executed' },
  rate_limited: { status: 429, meaning: 'too many requests' },
  internal_error: { status: 500, meaning: 'unexpected server error' },
  service_unavailable: { status: 503, meaning: 'temporary outage' },
} as const;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export interface ErrorDetail {
  field: string;
  issue: string;
}

/** The one error class. Throw it from anywhere; the error handler turns it into `{error, message}`. */
export class ApiError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly options: { details?: ErrorDetail[]; retryAfterSeconds?: number; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = ERROR_CATALOGUE[code].status;
  }
}

/** A path or method the contract does not have (D7, P8): one answer wherever it is found out. */
export function noSuchRoute(): ApiError {
  return new ApiError('not_found', 'No such route. See /openapi.json for the operations this service offers.');
}

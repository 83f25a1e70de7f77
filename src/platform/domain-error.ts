/**
 * What a use case refuses, in domain terms. The closed set keeps features free of HTTP: the one
 * mapping to catalogue codes and statuses lives in `platform/http/error-handler.ts`.
 */
export const DOMAIN_ERROR_KINDS = [
  /** The thing asked for does not exist for this caller (or belongs to someone else). */
  'not_found',
  /** The same request key was already used for a different request. */
  'conflict',
  /** A field is well-formed for the contract but not acceptable (an unsafe URL, say). */
  'invalid',
  /** A valid request that cannot be carried out in the current state or within a limit. */
  'refused',
  /** A valid request made again sooner than its limit allows; `retryAfterSeconds` says when it may be. */
  'too_soon',
] as const;

export type DomainErrorKind = (typeof DOMAIN_ERROR_KINDS)[number];

export class DomainError extends Error {
  override name = 'DomainError';

  constructor(
    readonly kind: DomainErrorKind,
    message: string,
    /** For `invalid`: which input field is wrong, e.g. `body.url`. */
    readonly field?: string,
    /** For `too_soon`: how long until the request may be made again. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

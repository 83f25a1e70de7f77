import type { ErrorRequestHandler } from 'express';
import type { Logger } from '../logger.ts';
import { isDatabaseUnavailable } from '../db/database.ts';
import { DomainError, type DomainErrorKind } from '../domain-error.ts';
import { matchedOperation } from './matched-operation.ts';
import { ApiError, noSuchRoute, type ErrorCode, type ErrorDetail } from './error-catalogue.ts';

/**
 * Thrown by the JSON parser's hooks (app.ts) for a body that is not well-formed Unicode; answered as
 * `bad_request` with its message. Recognised by class: body-parser strips a parse error's own
 * properties, its name and status included, before passing it on.
 */
export class BodyEncodingError extends Error {}

interface ValidatorIssue {
  path?: string;
  message?: string;
  errorCode?: string;
}

interface HttpLikeError {
  status?: number;
  statusCode?: number;
  type?: string;
  message?: string;
  errors?: ValidatorIssue[];
}

/** `.body.creator_platforms/1` (validator) → `body.creator_platforms[1]`. */
function fieldOf(path: string | undefined): string {
  if (!path) return 'request';
  return path
    .replace(/\/(\d+)/g, '[$1]')
    .replace(/\//g, '.')
    .replace(/^\./, '')
    .replace(/^headers\./, 'header.');
}

/**
 * Ajv's wording where it reads as code rather than English ("items ## 0 and 1 are identical"), and
 * an empty body (`minProperties`) named by the fields it may hold, which Ajv's message cannot know.
 */
function readable(issue: ValidatorIssue, bodyFields: readonly string[]): string {
  const message = issue.message ?? 'is invalid';
  const duplicate = /^must NOT have duplicate items \(items ## (\d+) and (\d+) are identical\)$/.exec(message);
  if (duplicate) return `must not list the same value twice (items ${duplicate[1]} and ${duplicate[2]} are the same)`;
  if (/^must NOT have fewer than 1 properties$/.test(message) && fieldOf(issue.path) === 'body' && bodyFields.length > 0) {
    return `must not be empty: give at least one of ${bodyFields.join(', ')}`;
  }
  return message;
}

function isMissing(issue: ValidatorIssue): boolean {
  return issue.errorCode === 'required.openapi.validation' || /must have required property/.test(issue.message ?? '');
}

/**
 * Turns express-openapi-validator's 400 into the catalogue (D4): a missing required field or
 * header is `bad_request`; a field present with the wrong type, format, length or value, or an
 * unknown field, is `validation_error`.
 */
function fromValidation(error: HttpLikeError, bodyFields: readonly string[]): ApiError {
  const issues = error.errors ?? [];
  if (issues.some((issue) => /malformed uri/i.test(issue.message ?? ''))) return new ApiError('bad_request', 'The request path is not a valid URI.');
  const details: ErrorDetail[] = issues.map((issue) => ({ field: fieldOf(issue.path), issue: readable(issue, bodyFields) }));
  const missing = issues.filter(isMissing);
  if (missing.length > 0) {
    const names = missing.map((issue) => {
      const property = /required property '([^']+)'/.exec(issue.message ?? '')?.[1];
      const field = fieldOf(issue.path);
      return property && !field.endsWith(property) ? `${field}.${property}` : field;
    });
    return new ApiError('bad_request', `Missing required ${names.length > 1 ? 'fields' : 'field'}: ${names.join(', ')}`, { details });
  }
  if (issues.some((issue) => /request\.body|body required/i.test(`${issue.path} ${issue.message}`) && /required/i.test(issue.message ?? ''))) {
    return new ApiError('bad_request', 'A JSON request body is required.', { details });
  }
  const summary = details.map((d) => `${d.field}: ${d.issue}`).join('; ');
  return new ApiError('validation_error', summary || 'The request failed validation.', { details });
}

/** The one place where a use case's refusal becomes a catalogue code (and so an HTTP status). */
const CATALOGUE_CODE_OF: Record<DomainErrorKind, ErrorCode> = {
  not_found: 'not_found',
  conflict: 'duplicate_request',
  invalid: 'validation_error',
  refused: 'unprocessable',
  too_soon: 'rate_limited',
};

function fromDomain(error: DomainError): ApiError {
  const details = error.field ? [{ field: error.field, issue: error.message }] : undefined;
  return new ApiError(CATALOGUE_CODE_OF[error.kind], error.field ? `${error.field.replace(/^body\./, '')}: ${error.message}` : error.message, {
    ...(details ? { details } : {}),
    ...(error.retryAfterSeconds !== undefined ? { retryAfterSeconds: error.retryAfterSeconds } : {}),
  });
}

/**
 * Maps anything thrown to a catalogue error. Unknown errors become internal_error and are logged.
 * `bodyFields` are the fields of the matched operation's request body, for messages that name them.
 */
export function toApiError(error: unknown, logger: Logger, bodyFields: readonly string[] = []): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof DomainError) return fromDomain(error);
  const e = (error ?? {}) as HttpLikeError;
  // The JSON parser's hooks (app.ts) refuse bodies that are not well-formed Unicode; body-parser
  // passes their error on, typed as a verify or parse failure.
  if (error instanceof BodyEncodingError) return new ApiError('bad_request', error.message);
  if (e.type === 'entity.parse.failed') return new ApiError('bad_request', 'Malformed JSON in the request body.');
  if (e.type === 'entity.too.large') return new ApiError('bad_request', 'The request body is larger than 256 KiB.');
  if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported') {
    return new ApiError('bad_request', 'Unsupported request body encoding; send UTF-8 JSON.');
  }
  if (error instanceof URIError) return new ApiError('bad_request', 'The request path is not a valid URI.');
  if (isDatabaseUnavailable(error)) {
    logger.warn({ err: error }, 'database unavailable');
    return new ApiError('service_unavailable', 'The service is temporarily unavailable; retry shortly.', { retryAfterSeconds: 2 });
  }
  const status = e.status ?? e.statusCode;
  switch (status) {
    case 400:
      return fromValidation(e, bodyFields);
    case 401:
      return new ApiError('unauthorized', e.message ?? 'Unauthorized.', { headers: { 'WWW-Authenticate': 'Bearer realm="api"' } });
    case 403:
      return new ApiError('forbidden', e.message ?? 'Forbidden.');
    // D7: wrong methods are answered like unknown routes.
    case 404:
    case 405:
      return noSuchRoute();
    case 413:
      return new ApiError('bad_request', 'The request body is larger than 256 KiB.');
    case 415:
      return new ApiError('bad_request', 'Unsupported Content-Type; send application/json.');
    default:
      logger.error({ err: error }, 'unhandled error');
      return new ApiError('internal_error', 'An unexpected error occurred. Quote the X-Request-Id header to support.');
  }
}

/** The one Express error handler: every error leaves as JSON `{error, message}`, never HTML or a stack. */
export function errorHandler(logger: Logger, bodyFieldsOf: (operationId: string) => readonly string[] = () => []): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent) return next(error);
    const operationId = matchedOperation(req)?.operationId;
    const apiError = toApiError(error, logger.child({ requestId: req.requestId }), operationId ? bodyFieldsOf(operationId) : []);
    for (const [name, value] of Object.entries(apiError.options.headers ?? {})) res.setHeader(name, value);
    if (apiError.options.retryAfterSeconds !== undefined) {
      res.setHeader('Retry-After', String(Math.max(1, Math.ceil(apiError.options.retryAfterSeconds))));
    }
    const body: Record<string, unknown> = { error: apiError.code, message: apiError.message };
    if (apiError.options.details?.length) body.details = apiError.options.details;
    // Written directly rather than through res.json: nothing hooked onto res.json (the response
    // validator of tests) may turn an error into an HTML page.
    const text = JSON.stringify(body);
    res.status(apiError.status);
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', Buffer.byteLength(text));
    res.end(text);
  };
}

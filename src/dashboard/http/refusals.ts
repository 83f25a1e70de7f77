import type { ErrorRequestHandler, RequestHandler } from 'express';
import { isDatabaseUnavailable } from '../../platform/db/database.ts';
import { DomainError } from '../../platform/domain-error.ts';
import { STATUS_OF_DOMAIN_ERROR, type Dashboard } from './context.ts';

/** What a page or action threw, as a page: a use case's refusal in its own words, an outage, or a logged failure. */
export function refusals({ deps, refuse }: Dashboard): ErrorRequestHandler {
  return (error, _req, res, next) => {
    if (res.headersSent) return next(error);
    if (error instanceof DomainError) {
      const title = { not_found: 'Not found', conflict: 'Conflict', invalid: 'Please check the form', refused: 'Not possible', too_soon: 'Not yet' }[
        error.kind
      ];
      return refuse(res, STATUS_OF_DOMAIN_ERROR[error.kind], title, error.message);
    }
    if (isDatabaseUnavailable(error)) {
      deps.logger.warn({ err: error }, 'dashboard: database unavailable');
      res.setHeader('Retry-After', '5');
      return refuse(res, 503, 'Temporarily unavailable', 'The service cannot reach its database right now. Try again in a few seconds.');
    }
    deps.logger.error({ err: error }, 'dashboard page failed');
    return refuse(res, 500, 'Something went wrong', 'The page could not be shown. The error was logged; try again.');
  };
}

/** A page the dashboard does not have; another method on an unknown path is left to the app's JSON not_found. */
export function notFound({ refuse }: Dashboard): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    return refuse(res, 404, 'Not found', 'There is no such dashboard page.');
  };
}

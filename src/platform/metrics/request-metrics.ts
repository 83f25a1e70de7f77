import type { Request } from 'express';
import type { ApiOperation } from '../http/api-document.ts';
import { DOCUMENT_PATHS } from '../http/docs.ts';
import { matchedOperation } from '../http/matched-operation.ts';
import type { ObserveRequest } from '../http/request-log.ts';
import { httpRequestDuration, rateLimitRefusals } from './metrics.ts';

type Observer = { observe(seconds: number): void };

/** One operation's histogram children, by status code: labels are resolved once, not per request. */
class OperationSeries {
  private readonly byStatus: Observer[] = [];

  constructor(private readonly operation: string) {}

  observe(status: number, seconds: number): void {
    let child = this.byStatus[status];
    if (!child) {
      child = httpRequestDuration.labels(this.operation, String(status));
      this.byStatus[status] = child;
    }
    child.observe(seconds);
  }
}

/** Paths outside the API, grouped: their own routes are no operation of the spec. */
const PAGES: Array<[RegExp, string]> = [
  [/^\/consent(\/|$)/, 'consent_pages'],
  [DOCUMENT_PATHS, 'documents'],
];

/**
 * Counts every finished request, timed by the request log (http/request-log.ts), under its spec
 * operationId and status (and 429s as rate-limit refusals). A request the validator matched to an
 * operation is found by its operationId in a map; only requests refused before that (401, 404, 429)
 * have their path matched against the spec's paths. Anything else is `unmatched`, so a scanner's random
 * paths add no series.
 */
export function requestMetrics(operations: ApiOperation[]): ObserveRequest {
  const byOperationId = new Map<string, { pattern: RegExp; series: OperationSeries }>();
  const patterns: Array<{ method: string; pattern: RegExp; series: OperationSeries }> = [];
  for (const operation of operations) {
    const series = new OperationSeries(operation.operationId);
    byOperationId.set(operation.operationId, { pattern: operation.exactPath, series });
    patterns.push({ method: operation.method.toUpperCase(), pattern: operation.exactPath, series });
  }
  const pages = PAGES.map(([pattern, name]) => ({ pattern, series: new OperationSeries(name) }));
  const unmatched = new OperationSeries('unmatched');
  const refusedKey = rateLimitRefusals.labels('key');
  const refusedAddress = rateLimitRefusals.labels('address');

  function seriesOf(req: Request): OperationSeries {
    const path = req.originalUrl.split('?')[0]!;
    // The validator's match, when its path is the operation's exactly: its patterns also take a
    // trailing slash (`/healthz/`), which is no operation's path and counts as unmatched.
    const matched = matchedOperation(req);
    const operation = matched && byOperationId.get(matched.operationId);
    if (operation?.pattern.test(path)) return operation.series;
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    for (const candidate of patterns) if (candidate.method === method && candidate.pattern.test(path)) return candidate.series;
    for (const page of pages) if (page.pattern.test(path)) return page.series;
    return unmatched;
  }

  return (req, status, seconds) => {
    seriesOf(req).observe(status, seconds);
    if (status === 429) (req.principal ? refusedKey : refusedAddress).inc();
  };
}

import type { Request } from 'express';
import type { ApiOperation } from '../http/api-document.ts';
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
  [/^\/(docs|openapi\.json|asyncapi\.yaml|schemas|examples)(\/|$)/, 'documents'],
];

/**
 * Counts every finished request, timed by the request log (http/request-log.ts), under its spec
 * operationId and status (and 429s as rate-limit refusals). A request the validator matched to an
 * operation is found by its operationId in a map; only requests refused before that (401, 404, 429)
 * have their path matched against the spec's paths. Anything else is `unmatched`, so a scanner's random
 * paths add no series.
 */
export function requestMetrics(operations: ApiOperation[]): ObserveRequest {
  const byOperationId = new Map<string, OperationSeries>();
  const patterns: Array<{ method: string; pattern: RegExp; series: OperationSeries }> = [];
  for (const operation of operations) {
    const series = new OperationSeries(operation.operationId);
    const method = operation.method.toUpperCase();
    byOperationId.set(operation.operationId, series);
    const segments = operation.path.split('/').map((segment) => (/^\{[^}]+\}$/.test(segment) ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
    patterns.push({ method, pattern: new RegExp(`^${segments.join('/')}$`), series });
  }
  const pages = PAGES.map(([pattern, name]) => ({ pattern, series: new OperationSeries(name) }));
  const unmatched = new OperationSeries('unmatched');
  const refusedKey = rateLimitRefusals.labels('key');
  const refusedAddress = rateLimitRefusals.labels('address');

  function seriesOf(req: Request): OperationSeries {
    const matched = matchedOperation(req);
    const series = matched && byOperationId.get(matched.operationId);
    if (series) return series;
    const path = req.originalUrl.split('?')[0]!;
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

import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import type { Logger } from '../logger.ts';
import { collectProcessMetrics, processRegistry } from './metrics.ts';

const digest = (value: string) => createHash('sha256').update(value).digest();

function answer(res: ServerResponse, status: number, error: string, message: string, headers: Record<string, string> = {}): void {
  const body = JSON.stringify({ error, message });
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store', ...headers });
  res.end(body);
}

/**
 * `GET /metrics` in Prometheus's text format, for the metrics listener (METRICS_PORT): a port of its
 * own, never the public API port, so the API keeps only the contract's routes and the metrics stay
 * on the network Prometheus scrapes from. With METRICS_TOKEN set, a scrape must also send
 * `Authorization: Bearer <token>` (compared in constant time).
 */
export function metricsEndpoint(options: { registries: Registry[]; token: string | null; logger: Logger }): RequestListener {
  const registries = processRegistries(options.registries);
  return metricsListener({
    collect: async () => (await Promise.all(registries.map((registry) => registry.metrics()))).join(''),
    token: options.token,
    logger: options.logger,
  });
}

/** The registries a server process reports, for its cluster's primary to aggregate (WEB_CONCURRENCY). */
export function processRegistries(registries: Registry[]): Registry[] {
  collectProcessMetrics();
  return [processRegistry, ...registries];
}

/** The same endpoint, serving whatever `collect` gathers (a cluster's primary: its workers' metrics, aggregated). */
export function metricsListener(options: { collect: () => Promise<string>; token: string | null; logger: Logger }): RequestListener {
  const expected = options.token ? digest(`Bearer ${options.token}`) : null;
  const authorised = (req: IncomingMessage) => !expected || timingSafeEqual(digest(req.headers.authorization ?? ''), expected);

  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    // As on the API (D7), a path or method not served is 404, in the catalogue's JSON.
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD'))
      return answer(res, 404, 'not_found', 'Only GET /metrics is served on this port.');
    if (!authorised(req)) {
      return answer(res, 401, 'unauthorized', 'Send "Authorization: Bearer <METRICS_TOKEN>".', { 'WWW-Authenticate': 'Bearer realm="metrics"' });
    }
    void (async () => {
      try {
        const text = await options.collect();
        res.writeHead(200, { 'Content-Type': processRegistry.contentType, 'Cache-Control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : text);
      } catch (error) {
        options.logger.error({ err: error }, 'metrics scrape failed');
        answer(res, 500, 'internal_error', 'The metrics could not be collected.');
      }
    })();
  };
}

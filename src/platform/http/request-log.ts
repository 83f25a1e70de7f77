import { subscribe } from 'node:diagnostics_channel';
import type { Request, Response } from 'express';
import type { Logger } from '../logger.ts';

/**
 * The path as it may be logged: never the query (OAuth codes and states, data-protection
 * identifiers) and never a consent link's token, which lets whoever holds it act as the creator.
 * A request line may carry an absolute URL (`GET http://host/consent/<token>`), which is routed by
 * its path: the scheme and host go too.
 */
export function withoutSecrets(originalUrl: string): string {
  return originalUrl
    .split('?')[0]!
    .replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '')
    .replace(/^\/consent\/(?!assets\/|oauth\/)[^/]+/, '/consent/:token');
}

/** The creator's pages: the consent link's pages, the OAuth callbacks and the privacy notice. */
const isCreatorPath = (path: string) => path === '/consent' || path.startsWith('/consent/');

/** Counts and times a finished request (platform/metrics); absent when metrics are off. */
export type ObserveRequest = (req: Request, status: number, seconds: number) => void;

const STARTED = Symbol('requestStarted');
const FINISHED = Symbol('requestFinished');
type TrackedResponse = Response & { [STARTED]: number; [FINISHED]: (this: TrackedResponse) => void };

/**
 * One line per request, written when the response finishes: 5xx as error, 4xx as warn, the rest as
 * info; and, when metrics are on, the request's observation. Headers (and with them the API key)
 * are never logged.
 *
 * Written here rather than with pino-http, which builds a child logger for every request even when
 * the line is not written (about a sixth of the service's CPU under load). And no `finish` listener
 * is added to each response: the closure and listener cost more than the metrics observation itself.
 * Instead each response is marked with its start time and its app's finishing function, which one
 * process-wide subscriber calls (see listenForFinishedResponses).
 */
export function requestLog(logger: Logger, observe?: ObserveRequest): (req: Request, res: Response) => void {
  // The line's fields are the ones below, none a secret: no header, the path without its query or a
  // consent token. Redaction by field name (logger.ts) would find nothing in them and cost more than
  // the rest of the line (21 against 10 µs a line, docs/performance.md), so this line skips it; a
  // test keeps the fields to this list.
  const lines = logger.child({}, { redact: { paths: [] } });
  function finished(this: TrackedResponse): void {
    const req = this.req;
    const status = this.statusCode;
    const ms = performance.now() - this[STARTED];
    observe?.(req, status, ms / 1000);
    const level = status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info';
    if (!lines.isLevelEnabled(level)) return;
    const principal = req.principal;
    const path = withoutSecrets(req.originalUrl);
    lines[level](
      {
        requestId: req.requestId,
        method: req.method,
        path,
        status,
        ms: Math.round(ms),
        // A consent page's caller is the creator, and their address is personal data the service has
        // no use for once the request is answered: it is not logged (docs/data-protection.md).
        ...(isCreatorPath(path) ? {} : { remoteAddress: req.ip }),
        ...(principal ? { lenderId: principal.lender.id, keyId: principal.keyId } : {}),
      },
      'request completed',
    );
  }

  listenForFinishedResponses();
  return (_req, res) => {
    (res as TrackedResponse)[STARTED] = performance.now();
    (res as TrackedResponse)[FINISHED] = finished;
  };
}

/**
 * Node publishes every finished response on the `http.server.response.finish` diagnostics channel,
 * from its own `finish` listener. Responses no app marked (the metrics port's own, another server
 * in the same process) are left alone.
 */
let listening = false;
function listenForFinishedResponses(): void {
  if (listening) return;
  listening = true;
  subscribe('http.server.response.finish', (message) => {
    const res = (message as { response: Partial<TrackedResponse> }).response;
    res[FINISHED]?.call(res as TrackedResponse);
  });
}

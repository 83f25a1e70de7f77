import type { RequestHandler } from 'express';
import type { Logger } from '../logger.ts';

/**
 * One line per request, written when the response finishes: 5xx as error, 4xx as warn, the rest as
 * info. Headers (and with them the API key) are never logged. Written here rather than with
 * pino-http because that builds a child logger for every request even when the line is not
 * written, which cost about a sixth of the service's CPU under load at the usual levels.
 */
/**
 * The path as it may be logged: never the query (OAuth codes and states, data-protection
 * identifiers) and never a consent link's token, which lets whoever holds it act as the creator.
 */
export function withoutSecrets(originalUrl: string): string {
  return originalUrl.split('?')[0]!.replace(/^\/consent\/(?!assets\/|oauth\/)[^/]+/, '/consent/:token');
}

export function requestLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    res.once('finish', () => {
      const level = res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info';
      if (!logger.isLevelEnabled(level)) return;
      const principal = req.principal;
      logger[level](
        {
          requestId: req.requestId,
          method: req.method,
          path: withoutSecrets(req.originalUrl),
          status: res.statusCode,
          ms: Math.round(performance.now() - started),
          remoteAddress: req.ip,
          ...(principal ? { lenderId: principal.lender.id, keyId: principal.keyId } : {}),
        },
        'request completed',
      );
    });
    next();
  };
}

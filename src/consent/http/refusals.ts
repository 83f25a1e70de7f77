import type { ErrorRequestHandler, RequestHandler } from 'express';
import { isDatabaseUnavailable } from '../../platform/db/database.ts';
import { ConsentRefused } from '../consent-flow.ts';
import { consentPath, messagePage, PLATFORM_NAMES, wordsOf, type PageContext } from '../pages.ts';
import type { ConsentPages } from './context.ts';

/**
 * A form posted from another site (a forged request that somehow knows the token) is refused:
 * browsers say where a request comes from in Sec-Fetch-Site. Origin cannot serve, since the
 * pages' no-referrer policy makes browsers send `Origin: null` on their own form posts.
 */
export function refuseCrossSite({ html, localeOf }: ConsentPages): RequestHandler {
  return (req, res, next) => {
    const site = req.get('sec-fetch-site');
    if (!site || site === 'same-origin' || site === 'none') return next();
    const { m } = wordsOf({ locale: localeOf(req, res) });
    return html(res, 403, messagePage({ locale: localeOf(req, res), here: '/consent/privacy' }, m.crossSiteTitle, m.crossSiteText));
  };
}

/** What a page or action threw, as a page in the creator's language. */
export function refusals({ deps, html, localeOf }: ConsentPages): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent) return next(error);
    // The error handler sees no route parameters: the token is read from the path itself.
    const token = /^\/([A-Za-z0-9]{20,100})(?:\/|$)/.exec(req.path)?.[1] ?? '';
    if (error instanceof ConsentRefused) {
      // The link closed meanwhile (declined twice, consent after a decline): its page says how it ended.
      if (error.reason === 'closed' && token) return res.redirect(303, consentPath(token));
      // Every other refusal on a link's page comes after the link was found open, so its page exists to go back to.
      const onLink = Boolean(token) && error.reason !== 'closed' && error.reason !== 'stale_sign_in' && error.reason !== 'other_browser';
      const ctx: PageContext = { locale: localeOf(req, res), ...(onLink ? { token, here: consentPath(token) } : {}) };
      const { m } = wordsOf(ctx);
      const platform = { platform: PLATFORM_NAMES[error.platform ?? 'youtube'] };
      const [status, text] = {
        already_connected: [422, m.alreadyConnectedText(platform)],
        nothing_connected: [422, m.nothingConnectedText],
        provider_refused: [422, m.providerRefusedText(platform)],
        closed: [409, m.signInExpiredText],
        stale_sign_in: [409, m.signInExpiredText],
        other_browser: [403, m.otherBrowserText(platform)],
        unavailable: [503, m.platformUnavailableText],
        not_requested: [404, m.unknownPlatformText],
      }[error.reason] as [number, string];
      return html(res, status, messagePage(ctx, m.refusedTitle, text, { back: onLink }));
    }
    const ctx: PageContext = { locale: localeOf(req, res) };
    const { m } = wordsOf(ctx);
    if (isDatabaseUnavailable(error)) {
      // A temporary outage, as the API says it (503 with Retry-After), in words a creator understands.
      deps.logger.warn({ err: error }, 'consent page: database unavailable');
      res.setHeader('Retry-After', '5');
      return html(res, 503, messagePage(ctx, m.unavailableTitle, m.unavailableText));
    }
    deps.logger.error({ err: error }, 'consent page failed');
    return html(res, 500, messagePage(ctx, m.errorTitle, m.errorText));
  };
}

/**
 * A browser only GETs pages (and POSTs the forms): anything else is an API-style client, which gets
 * the catalogue's JSON not_found from the app, like a wrong method anywhere (D7).
 */
export function notFound({ html, localeOf }: ConsentPages): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const ctx: PageContext = { locale: localeOf(req, res) };
    const { m } = wordsOf(ctx);
    return html(res, 404, messagePage(ctx, m.notFoundTitle, m.notFoundText));
  };
}

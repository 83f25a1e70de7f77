import type { RequestHandler } from 'express';
import { finishConnection } from '../consent-flow.ts';
import { consentPath, messagePage, wordsOf, type PageContext } from '../pages.ts';
import { bindingCookie, cookiesOf, platformOf, type ConsentPages } from './context.ts';

/** The providers send the creator back here (one fixed redirect URI per platform, as they require). */
export function oauthCallback({ deps, html, localeOf, secureCookies, bindingOptions }: ConsentPages): RequestHandler {
  return async (req, res) => {
    const platform = platformOf(req);
    if (!platform || deps.mode === 'sandbox') {
      const ctx: PageContext = { locale: localeOf(req, res) };
      const { m } = wordsOf(ctx);
      return html(res, 404, messagePage(ctx, m.notFoundTitle, m.notFoundText));
    }
    const callbackUrl = new URL(req.originalUrl, deps.publicBaseUrl);
    const binding = bindingCookie(callbackUrl.searchParams.get('state') ?? '', secureCookies);
    // Spent whatever the outcome, as the state it binds is.
    res.clearCookie(binding, bindingOptions);
    const outcome = await finishConnection(deps, platform, callbackUrl, deps.publicBaseUrl, cookiesOf(req)[binding]);
    if (outcome.connected) return res.redirect(303, `${consentPath(outcome.consentToken)}?connected=${platform}`);
    return res.redirect(303, `${consentPath(outcome.consentToken)}/denied/${platform}${outcome.refused === 'error' ? '?why=error' : ''}`);
  };
}

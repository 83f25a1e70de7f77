import type { RequestHandler } from 'express';
import { openConsentSession, startConnection } from '../consent-flow.ts';
import { consentPath, messagePage, wordsOf } from '../pages.ts';
import { bindingCookie, platformOf, tokenOf, type ConsentPages } from './context.ts';

/** Connect: off to the provider's sign-in (in a sandbox, to its stand-in), the round trip bound to this browser. */
export function connect(pages: ConsentPages): RequestHandler {
  const { deps, html, secure, closed, linkContext, unavailable, secureCookies, bindingOptions } = pages;
  return async (req, res) => {
    const token = tokenOf(req);
    const platform = platformOf(req);
    const session = await openConsentSession(deps, token);
    if (session.kind !== 'open') return closed(req, res, session);
    const ctx = linkContext(req, res, session);
    const { m, platform: name } = wordsOf(ctx);
    if (!platform || !session.verification.creatorPlatforms.includes(platform)) {
      return html(res, 404, messagePage(ctx, m.unknownPlatformTitle, m.unknownPlatformText, { back: true }));
    }
    if (session.connections.get(platform) === 'connected') {
      return html(res, 422, messagePage(ctx, m.alreadyConnectedTitle, m.alreadyConnectedText({ platform: name(platform) }), { back: true }));
    }
    if (deps.mode === 'sandbox') return res.redirect(303, `${consentPath(token)}/sandbox/${platform}`);
    // A page shown before the platform became unavailable (or a hand-made post): back to the page, which explains.
    if (unavailable.has(platform)) return res.redirect(303, consentPath(token));
    const started = await startConnection(deps, token, platform, deps.publicBaseUrl);
    res.cookie(bindingCookie(started.state, secureCookies), started.browserBinding, { ...bindingOptions, expires: started.expiresAt });
    secure(res);
    return res.redirect(303, started.authorization.toString());
  };
}

import type { RequestHandler } from 'express';
import { openConsentSession } from '../consent-flow.ts';
import { consentPath, providerDeniedPage } from '../pages.ts';
import { platformOf, tokenOf, type ConsentPages } from './context.ts';

/** Where the creator lands after refusing (or failing) on the provider's page. */
export function providerDenied({ deps, html, closed, linkContext }: ConsentPages): RequestHandler {
  return async (req, res) => {
    const session = await openConsentSession(deps, tokenOf(req));
    if (session.kind !== 'open') return closed(req, res, session);
    const platform = platformOf(req);
    if (!platform || !session.verification.creatorPlatforms.includes(platform) || session.connections.get(platform) === 'connected') {
      return res.redirect(303, consentPath(tokenOf(req)));
    }
    const why = req.query.why === 'error' ? 'error' : 'denied';
    const here = `${consentPath(tokenOf(req))}/denied/${platform}${why === 'error' ? '?why=error' : ''}`;
    return html(res, 200, providerDeniedPage(linkContext(req, res, session, here), platform, why));
  };
}

import type { RequestHandler } from 'express';
import { openConsentSession } from '../consent-flow.ts';
import { consentPath, privacyPage } from '../pages.ts';
import { tokenOf, type ConsentPages } from './context.ts';

/** The privacy notice on its own, linked from pages that have no consent link. */
export function privacyNotice({ html, localeOf }: ConsentPages): RequestHandler {
  return (req, res) => {
    const locale = localeOf(req, res);
    return html(res, 200, privacyPage({ locale, here: '/consent/privacy' }));
  };
}

/** The privacy notice of a link, naming its lender; a link's notice stays readable after it closed. */
export function linkPrivacyNotice({ deps, html, closed, linkContext }: ConsentPages): RequestHandler {
  return async (req, res) => {
    const session = await openConsentSession(deps, tokenOf(req));
    if (session.kind === 'unknown') return closed(req, res, session);
    return html(res, 200, privacyPage(linkContext(req, res, session, `${consentPath(tokenOf(req))}/privacy`)));
  };
}

import type { RequestHandler } from 'express';
import { declineConsent, openConsentSession } from '../consent-flow.ts';
import { consentPath, declineConfirmPage } from '../pages.ts';
import { tokenOf, type ConsentPages } from './context.ts';

export function declineConfirm({ deps, html, closed, linkContext }: ConsentPages): RequestHandler {
  return async (req, res) => {
    const session = await openConsentSession(deps, tokenOf(req));
    if (session.kind !== 'open') return closed(req, res, session);
    return html(res, 200, declineConfirmPage(linkContext(req, res, session, `${consentPath(tokenOf(req))}/decline`)));
  };
}

/** The link's page then says the request was declined. */
export function declineSubmit({ deps }: ConsentPages): RequestHandler {
  return async (req, res) => {
    await declineConsent(deps, tokenOf(req));
    return res.redirect(303, consentPath(tokenOf(req)));
  };
}

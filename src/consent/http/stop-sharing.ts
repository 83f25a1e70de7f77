import type { RequestHandler } from 'express';
import { openConsentSession } from '../consent-flow.ts';
import { consentPath, messagePage, stopConfirmPage, stopPath, wordsOf } from '../pages.ts';
import { canStopSharing, isStopFormValid, newBrowserSecret, stopFormToken, stopSharing } from '../stop-sharing.ts';
import { cookiesOf, STOP_COOKIE_MAX_AGE_MS, tokenOf, type ConsentPages } from './context.ts';

// Ongoing monitoring (P33): the completed link's page offers to stop; this page confirms.

export function stopSharingConfirm({ deps, html, closed, linkContext, stopCookieName, stopCookieOptions }: ConsentPages): RequestHandler {
  return async (req, res) => {
    const token = tokenOf(req);
    const session = await openConsentSession(deps, token);
    if (session.kind === 'unknown') return closed(req, res, session);
    // Nothing (or nothing any more) to stop: the link's page says what is shared, or why it ended.
    if (session.kind !== 'finished' || !canStopSharing(session.verification)) return res.redirect(303, consentPath(token));
    const secret = cookiesOf(req)[stopCookieName] || newBrowserSecret();
    res.cookie(stopCookieName, secret, { ...stopCookieOptions, maxAge: STOP_COOKIE_MAX_AGE_MS });
    return html(res, 200, stopConfirmPage(linkContext(req, res, session, stopPath(token)), stopFormToken(secret, token)));
  };
}

export function stopSharingSubmit({ deps, html, closed, linkContext, stopCookieName }: ConsentPages): RequestHandler {
  return async (req, res) => {
    const token = tokenOf(req);
    const session = await openConsentSession(deps, token);
    if (session.kind === 'unknown') return closed(req, res, session);
    const submitted = (req.body as { _csrf?: unknown } | undefined)?._csrf;
    if (!isStopFormValid(cookiesOf(req)[stopCookieName], token, submitted)) {
      const ctx = linkContext(req, res, session);
      const { m } = wordsOf(ctx);
      return html(res, 403, messagePage(ctx, m.crossSiteTitle, m.stopRefusedText, { back: true }));
    }
    // A second post (a double click, the back button) finds nothing to stop and shows the same page.
    if (session.kind === 'finished') await stopSharing(deps, session.verification);
    return res.redirect(303, consentPath(token));
  };
}

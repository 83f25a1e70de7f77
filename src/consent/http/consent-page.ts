import type { RequestHandler } from 'express';
import { openConsentSession } from '../consent-flow.ts';
import { consentPage, wordsOf } from '../pages.ts';
import { platformNamed, tokenOf, type ConsentPages } from './context.ts';

/** The link's page: what the lender asks, each platform to connect, or how the link ended. */
export function consentLinkPage({ deps, html, closed, linkContext, unavailable }: ConsentPages): RequestHandler {
  return async (req, res) => {
    const session = await openConsentSession(deps, tokenOf(req));
    if (session.kind !== 'open') return closed(req, res, session);
    const ctx = linkContext(req, res, session);
    const connected = platformNamed(req.query.connected);
    const { m, platform } = wordsOf(ctx);
    const notice = connected ? m.connectedNotice({ platform: platform(connected) }) : undefined;
    return html(res, 200, consentPage(ctx, { verification: session.verification, connections: session.connections, notice, unavailable }));
  };
}

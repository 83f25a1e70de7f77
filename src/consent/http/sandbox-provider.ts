import type { RequestHandler } from 'express';
import { decideSandboxConnection, openConsentSession } from '../consent-flow.ts';
import { consentPath, messagePage, sandboxProviderPage, wordsOf, type PageContext } from '../pages.ts';
import { platformOf, tokenOf, type ConsentPages } from './context.ts';

// A sandbox has no provider to send the creator to: these pages stand in for its sign-in and consent.

export function sandboxProvider({ deps, html, closed, linkContext }: ConsentPages): RequestHandler {
  return async (req, res) => {
    const platform = platformOf(req);
    const session = await openConsentSession(deps, tokenOf(req));
    if (session.kind !== 'open') return closed(req, res, session);
    const ctx = linkContext(req, res, session);
    if (!platform || !session.verification.creatorPlatforms.includes(platform)) {
      const { m } = wordsOf(ctx);
      return html(res, 404, messagePage(ctx, m.unknownPlatformTitle, m.unknownPlatformText, { back: true }));
    }
    return html(res, 200, sandboxProviderPage({ ...ctx, here: `${consentPath(tokenOf(req))}/sandbox/${platform}` }, platform));
  };
}

export function sandboxProviderDecision({ deps, html, localeOf }: ConsentPages): RequestHandler {
  return async (req, res) => {
    const token = tokenOf(req);
    const platform = platformOf(req);
    if (!platform) {
      const ctx: PageContext = { locale: localeOf(req, res) };
      const { m } = wordsOf(ctx);
      return html(res, 404, messagePage(ctx, m.unknownPlatformTitle, m.unknownPlatformText));
    }
    const allow = (req.body as { decision?: unknown } | undefined)?.decision === 'allow';
    await decideSandboxConnection(deps, token, platform, allow);
    // Deny stands in for the provider's `access_denied`, and lands where a real refusal does.
    return res.redirect(303, allow ? `${consentPath(token)}?connected=${platform}` : `${consentPath(token)}/denied/${platform}`);
  };
}

import express, { type ErrorRequestHandler, type Response, type Router } from 'express';
import type { ServiceMode } from '../../platform/config.ts';
import { isDatabaseUnavailable } from '../../platform/db/database.ts';
import {
  completeConsent,
  ConsentRefused,
  decideSandboxConnection,
  finishConnection,
  openConsentSession,
  startConnection,
  type ConsentDeps,
  type Platform,
} from '../consent-flow.ts';
import { consentPage, CONSENT_CSS, messagePage, sandboxProviderPage } from '../pages.ts';

/**
 * Strict headers for pages a creator opens from a link: nothing from other origins, no framing,
 * and no Referer, since the URL itself carries the consent token.
 */
function secure(res: Response, formTargets: string): Response {
  res.setHeader(
    'Content-Security-Policy',
    `default-src 'none'; style-src 'self'; img-src 'self'; form-action ${formTargets}; frame-ancestors 'none'; base-uri 'none'`,
  );
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
  res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
  res.setHeader('Permissions-Policy', 'camera=(), microphone=(), geolocation=(), payment=()');
  res.setHeader('Cache-Control', 'no-store');
  return res;
}

const PLATFORM_NAMES: Record<string, Platform> = { youtube: 'youtube', stripe: 'stripe' };

/** The consent pages at `{PUBLIC_BASE_URL}/consent/{token}` (issue: creator consent). */
export function consentRoutes(deps: ConsentDeps & { mode: ServiceMode; publicBaseUrl: string }): Router {
  const router = express.Router({ strict: true, caseSensitive: true });
  // Browsers apply form-action to the redirect after a form post, so the providers' sign-in pages are allowed too.
  const formTargets = ["'self'", ...Object.values(deps.providers).map((p) => p.authorizationOrigin)].join(' ');
  const html = (res: Response, status: number, page: string) => secure(res, formTargets).status(status).type('html').send(page);
  router.use(express.urlencoded({ extended: false, limit: '4kb' }));

  router.get('/assets/consent.css', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.type('text/css').send(CONSENT_CSS);
  });

  const closed = (res: Response, session: Awaited<ReturnType<typeof openConsentSession>>) => {
    if (session.kind === 'unknown') {
      return html(
        res,
        404,
        messagePage(
          'This link does not work',
          'The consent link is not valid. Check that you opened the whole link your lender sent you, or ask them for a new one.',
        ),
      );
    }
    if (session.kind === 'expired') {
      return html(res, 410, messagePage('This link has expired', 'The consent session ended. Ask your lender for a new verification link.'));
    }
    if (session.verification.status === 'cancelled') {
      // Gone, like an expired link: the lender withdrew the request, so there is nothing to connect.
      return html(
        res,
        410,
        messagePage(
          'This request was withdrawn',
          `${session.verification.lenderName} withdrew this verification request. You do not need to do anything, and nothing from your accounts goes to the lender. You can close this page.`,
        ),
      );
    }
    return html(res, 200, messagePage('Consent already given', 'Thank you: this verification no longer needs anything from you. You can close this page.'));
  };

  router.get('/:token', async (req, res) => {
    const session = await openConsentSession(deps, req.params.token);
    if (session.kind !== 'open') return closed(res, session);
    const notice =
      typeof req.query.connected === 'string' && PLATFORM_NAMES[req.query.connected]
        ? `${req.query.connected === 'youtube' ? 'YouTube' : 'Stripe'} is connected.`
        : undefined;
    return html(res, 200, consentPage({ token: req.params.token, verification: session.verification, connections: session.connections, notice }));
  });

  router.post('/:token/connect/:platform', async (req, res) => {
    const platform = PLATFORM_NAMES[req.params.platform];
    const session = await openConsentSession(deps, req.params.token);
    if (session.kind !== 'open') return closed(res, session);
    if (!platform || !session.verification.creatorPlatforms.includes(platform)) {
      return html(res, 404, messagePage('Unknown platform', 'Your lender did not ask for this platform.', `/consent/${req.params.token}`));
    }
    if (session.connections.get(platform) === 'connected') {
      return html(
        res,
        422,
        messagePage(
          'Already connected',
          `${platform === 'youtube' ? 'YouTube' : 'Stripe'} is already connected for this verification.`,
          `/consent/${req.params.token}`,
        ),
      );
    }
    if (deps.mode === 'sandbox') return res.redirect(303, `/consent/${req.params.token}/sandbox/${platform}`);
    const authorization = await startConnection(deps, req.params.token, platform, deps.publicBaseUrl);
    secure(res, formTargets);
    return res.redirect(303, authorization.toString());
  });

  // The providers send the creator back here (one fixed redirect URI per platform, as they require).
  router.get('/oauth/:platform/callback', async (req, res) => {
    const platform = PLATFORM_NAMES[req.params.platform];
    if (!platform || deps.mode === 'sandbox') return html(res, 404, messagePage('Page not found', 'There is no such page.'));
    const { consentToken, connected } = await finishConnection(deps, platform, new URL(req.originalUrl, deps.publicBaseUrl), deps.publicBaseUrl);
    return res.redirect(303, `/consent/${consentToken}${connected ? `?connected=${platform}` : ''}`);
  });

  if (deps.mode === 'sandbox') {
    router.get('/:token/sandbox/:platform', async (req, res) => {
      const platform = PLATFORM_NAMES[req.params.platform];
      const session = await openConsentSession(deps, req.params.token);
      if (session.kind !== 'open') return closed(res, session);
      if (!platform) return html(res, 404, messagePage('Unknown platform', 'Your lender did not ask for this platform.'));
      return html(res, 200, sandboxProviderPage(req.params.token, platform, session.verification.lenderName));
    });
    router.post('/:token/sandbox/:platform', async (req, res) => {
      const platform = PLATFORM_NAMES[req.params.platform];
      if (!platform) return html(res, 404, messagePage('Unknown platform', 'Your lender did not ask for this platform.'));
      const allow = (req.body as { decision?: unknown } | undefined)?.decision === 'allow';
      await decideSandboxConnection(deps, req.params.token, platform, allow);
      return res.redirect(303, `/consent/${req.params.token}${allow ? `?connected=${platform}` : ''}`);
    });
  }

  router.post('/:token/complete', async (req, res) => {
    await completeConsent(deps, req.params.token);
    return res.redirect(303, `/consent/${req.params.token}`);
  });

  const refusals: ErrorRequestHandler = (error, req, res, next) => {
    if (res.headersSent) return next(error);
    const token = typeof req.params.token === 'string' ? req.params.token : '';
    const back = `/consent/${token}`;
    if (error instanceof ConsentRefused) {
      const status = { already_connected: 422, nothing_connected: 422, provider_refused: 422, closed: 409, unavailable: 503, not_requested: 404 }[error.reason];
      return html(res, status, messagePage('That did not work', error.message, error.reason === 'closed' ? undefined : back));
    }
    if (isDatabaseUnavailable(error)) {
      // A temporary outage, as the API says it (503 with Retry-After), in words a creator understands.
      deps.logger.warn({ err: error }, 'consent page: database unavailable');
      res.setHeader('Retry-After', '5');
      return html(res, 503, messagePage('Please try again in a moment', 'This page is briefly unavailable. Reload it in a minute; your progress is kept.'));
    }
    deps.logger.error({ err: error }, 'consent page failed');
    return html(res, 500, messagePage('Something went wrong', 'Please try again in a minute. If it keeps happening, contact your lender.'));
  };
  router.use(refusals);
  // A browser only GETs pages (and POSTs the forms above): anything else is an API-style client,
  // which gets the catalogue's JSON not_found from the app, like a wrong method anywhere (D7).
  router.use((req, res, next) =>
    req.method === 'GET' || req.method === 'HEAD' ? html(res, 404, messagePage('Page not found', 'There is no such page.')) : next(),
  );
  return router;
}

import { parse as parseCookies } from 'cookie';
import express, { type CookieOptions, type ErrorRequestHandler, type Request, type Response, type Router } from 'express';
import type { ServiceMode } from '../../platform/config.ts';
import { sha256Hex } from '../../platform/crypto.ts';
import { isDatabaseUnavailable } from '../../platform/db/database.ts';
import { securePage } from '../../platform/http/page-headers.ts';
import {
  completeConsent,
  ConsentRefused,
  declineConsent,
  decideSandboxConnection,
  finishConnection,
  openConsentSession,
  startConnection,
  type ConsentDeps,
  type ConsentSession,
  type Platform,
} from '../consent-flow.ts';
import { isLocale, LOCALES, type Locale } from '../i18n/catalogue.ts';
import {
  consentPage,
  consentPath,
  CONSENT_CSS,
  declineConfirmPage,
  messagePage,
  outcomePage,
  PLATFORM_NAMES,
  privacyPage,
  providerDeniedPage,
  sandboxProviderPage,
  stopConfirmPage,
  stopPath,
  wordsOf,
  type PageContext,
} from '../pages.ts';
import { canStopSharing, isStopFormValid, newBrowserSecret, stopFormToken, stopSharing } from '../stop-sharing.ts';

/**
 * Strict headers for pages a creator opens from a link, and no Referer, since the URL itself
 * carries the consent token.
 */
const secure = (res: Response, formTargets: string): Response => securePage(res, { formTargets, referrer: 'no-referrer', vary: 'Accept-Language, Cookie' });

const PLATFORMS: Record<string, Platform> = { youtube: 'youtube', stripe: 'stripe' };

/** The language the creator chose on these pages, remembered for a year (a preference cookie, nothing else). */
const LANGUAGE_COOKIE = 'consent_lang';
const LANGUAGE_COOKIE_MAX_AGE_MS = 365 * 24 * 60 * 60 * 1000;

/**
 * The cookie that binds an OAuth round trip to the browser that began it (RFC 9700, 4.7), one per
 * round trip, named by its state, so that two begun in one browser (two tabs) do not end each
 * other. `Lax`, since the provider brings the creator back by a top-level GET from its own site,
 * which `Strict` would send without it. On HTTPS its name takes the `__Host-` prefix, which browsers
 * accept only from this host, secure, on path `/`: no sibling subdomain or plain-HTTP answer can
 * plant a nonce of its own in the creator's browser.
 */
const bindingCookie = (state: string, secure: boolean) => `${secure ? '__Host-' : ''}consent_oauth_${sha256Hex(state).slice(0, 16)}`;

/**
 * The secret the stop form's token is made from (stop-sharing.ts), one per browser for all its
 * links. `Strict`: only this site's own pages ever post the form. An hour is long enough to read the
 * confirmation page; it is set only when that page is shown, so a one-time verification's creator
 * never gets it. `__Host-` on HTTPS, as the OAuth binding cookie, so no other host can plant one.
 */
const stopCookie = (secure: boolean) => `${secure ? '__Host-' : ''}consent_stop`;
const STOP_COOKIE_MAX_AGE_MS = 60 * 60 * 1000;

/** The consent pages at `{PUBLIC_BASE_URL}/consent/{token}` (issue: creator consent). */
export function consentRoutes(deps: ConsentDeps & { mode: ServiceMode; publicBaseUrl: string }): Router {
  const router = express.Router({ strict: true, caseSensitive: true });
  // Browsers apply form-action to the redirect after a form post, so the providers' sign-in pages are allowed too.
  const formTargets = ["'self'", ...Object.values(deps.providers).map((p) => p.authorizationOrigin)].join(' ');
  const html = (res: Response, status: number, page: string) => secure(res, formTargets).status(status).type('html').send(page);
  /**
   * A production service started without a platform's credentials cannot connect it: its consent
   * page says so in place of the button, rather than a click ending on an error page.
   */
  const unavailable: ReadonlySet<Platform> = new Set(
    deps.mode === 'production' ? Object.values(PLATFORMS).filter((platform) => !deps.providers[platform]) : [],
  );
  router.use(express.urlencoded({ extended: false, limit: '4kb' }));

  const cookiesOf = (req: Request) => parseCookies(req.headers.cookie ?? '');
  const secureCookies = deps.publicBaseUrl.startsWith('https:');
  const bindingOptions: CookieOptions = { path: secureCookies ? '/' : '/consent/oauth', httpOnly: true, sameSite: 'lax', secure: secureCookies };
  const stopCookieName = stopCookie(secureCookies);
  const stopCookieOptions: CookieOptions = { path: secureCookies ? '/' : '/consent', httpOnly: true, sameSite: 'strict', secure: secureCookies };

  /**
   * `?lang=` from the language links (then remembered), else the remembered choice, else the best
   * match of Accept-Language (Express's negotiator), else English.
   */
  const localeOf = (req: Request, res: Response): Locale => {
    const asked = req.query.lang;
    if (isLocale(asked)) {
      res.cookie(LANGUAGE_COOKIE, asked, {
        path: '/consent',
        httpOnly: true,
        sameSite: 'lax',
        secure: deps.publicBaseUrl.startsWith('https:'),
        maxAge: LANGUAGE_COOKIE_MAX_AGE_MS,
      });
      return asked;
    }
    const remembered = cookiesOf(req)[LANGUAGE_COOKIE];
    if (isLocale(remembered)) return remembered;
    const accepted = req.acceptsLanguages([...LOCALES]);
    return isLocale(accepted) ? accepted : 'en';
  };
  const tokenOf = (req: Request): string => (typeof req.params.token === 'string' ? req.params.token : '');
  /** The context of a page of an existing consent link, with language links back to `here`. */
  const linkContext = (
    req: Request,
    res: Response,
    session: { verification: { lenderName: string }; registeredLenderName: string | null },
    here?: string,
  ): PageContext & { token: string } => ({
    locale: localeOf(req, res),
    token: tokenOf(req),
    lenderName: session.verification.lenderName,
    registeredLenderName: session.registeredLenderName,
    here: here ?? consentPath(tokenOf(req)),
  });

  router.get('/assets/consent.css', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.type('text/css').send(CONSENT_CSS);
  });

  /**
   * A form posted from another site (a forged request that somehow knows the token) is refused:
   * browsers say where a request comes from in Sec-Fetch-Site. Origin cannot serve, since the
   * pages' no-referrer policy makes browsers send `Origin: null` on their own form posts.
   */
  router.post('/{*rest}', (req, res, next) => {
    const site = req.get('sec-fetch-site');
    if (!site || site === 'same-origin' || site === 'none') return next();
    const { m } = wordsOf({ locale: localeOf(req, res) });
    return html(res, 403, messagePage({ locale: localeOf(req, res), here: '/consent/privacy' }, m.crossSiteTitle, m.crossSiteText));
  });

  router.get('/privacy', (req, res) => {
    const locale = localeOf(req, res);
    return html(res, 200, privacyPage({ locale, here: '/consent/privacy' }));
  });

  /** Pages of a link that asks nothing more of the creator: unknown (404), expired (410), or its outcome. */
  const closed = (req: Request, res: Response, session: Exclude<ConsentSession, { kind: 'open' }>) => {
    if (session.kind === 'unknown') {
      const ctx: PageContext = { locale: localeOf(req, res) };
      const { m } = wordsOf(ctx);
      return html(res, 404, messagePage(ctx, m.unknownLinkTitle, m.unknownLinkText));
    }
    const ctx = linkContext(req, res, session);
    if (session.kind === 'expired') {
      // Past its expiry the link is expired even before the expiry job has moved the verification.
      const { verification } = session;
      const at = verification.status === 'expired' ? verification.updatedAt : verification.expiresAt;
      return html(res, 410, outcomePage(ctx, { ...verification, status: 'expired', updatedAt: at }));
    }
    // A withdrawn request is gone like an expired link (P24): there is nothing left to connect.
    return html(res, session.verification.status === 'cancelled' ? 410 : 200, outcomePage(ctx, session.verification));
  };

  router.get('/:token', async (req, res) => {
    const session = await openConsentSession(deps, tokenOf(req));
    if (session.kind !== 'open') return closed(req, res, session);
    const ctx = linkContext(req, res, session);
    const connected = typeof req.query.connected === 'string' ? PLATFORMS[req.query.connected] : undefined;
    const { m, platform } = wordsOf(ctx);
    const notice = connected ? m.connectedNotice({ platform: platform(connected) }) : undefined;
    return html(res, 200, consentPage(ctx, { verification: session.verification, connections: session.connections, notice, unavailable }));
  });

  router.get('/:token/privacy', async (req, res) => {
    const session = await openConsentSession(deps, tokenOf(req));
    if (session.kind === 'unknown') return closed(req, res, session);
    return html(res, 200, privacyPage(linkContext(req, res, session, `${consentPath(tokenOf(req))}/privacy`)));
  });

  router.get('/:token/decline', async (req, res) => {
    const session = await openConsentSession(deps, tokenOf(req));
    if (session.kind !== 'open') return closed(req, res, session);
    return html(res, 200, declineConfirmPage(linkContext(req, res, session, `${consentPath(tokenOf(req))}/decline`)));
  });

  router.post('/:token/decline', async (req, res) => {
    await declineConsent(deps, tokenOf(req));
    return res.redirect(303, consentPath(tokenOf(req)));
  });

  // Ongoing monitoring (P33): the completed link's page offers to stop; this page confirms.
  router.get('/:token/stop', async (req, res) => {
    const token = tokenOf(req);
    const session = await openConsentSession(deps, token);
    if (session.kind === 'unknown') return closed(req, res, session);
    // Nothing (or nothing any more) to stop: the link's page says what is shared, or why it ended.
    if (session.kind !== 'finished' || !canStopSharing(session.verification)) return res.redirect(303, consentPath(token));
    const secret = cookiesOf(req)[stopCookieName] || newBrowserSecret();
    res.cookie(stopCookieName, secret, { ...stopCookieOptions, maxAge: STOP_COOKIE_MAX_AGE_MS });
    return html(res, 200, stopConfirmPage(linkContext(req, res, session, stopPath(token)), stopFormToken(secret, token)));
  });

  router.post('/:token/stop', async (req, res) => {
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
  });

  // Where the creator lands after refusing (or failing) on the provider's page.
  router.get('/:token/denied/:platform', async (req, res) => {
    const session = await openConsentSession(deps, tokenOf(req));
    if (session.kind !== 'open') return closed(req, res, session);
    const platform = PLATFORMS[req.params.platform];
    if (!platform || !session.verification.creatorPlatforms.includes(platform) || session.connections.get(platform) === 'connected') {
      return res.redirect(303, consentPath(tokenOf(req)));
    }
    const why = req.query.why === 'error' ? 'error' : 'denied';
    const here = `${consentPath(tokenOf(req))}/denied/${platform}${why === 'error' ? '?why=error' : ''}`;
    return html(res, 200, providerDeniedPage(linkContext(req, res, session, here), platform, why));
  });

  router.post('/:token/connect/:platform', async (req, res) => {
    const token = tokenOf(req);
    const platform = PLATFORMS[req.params.platform];
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
    secure(res, formTargets);
    return res.redirect(303, started.authorization.toString());
  });

  // The providers send the creator back here (one fixed redirect URI per platform, as they require).
  router.get('/oauth/:platform/callback', async (req, res) => {
    const platform = PLATFORMS[req.params.platform];
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
  });

  if (deps.mode === 'sandbox') {
    router.get('/:token/sandbox/:platform', async (req, res) => {
      const platform = PLATFORMS[req.params.platform];
      const session = await openConsentSession(deps, tokenOf(req));
      if (session.kind !== 'open') return closed(req, res, session);
      const ctx = linkContext(req, res, session);
      if (!platform || !session.verification.creatorPlatforms.includes(platform)) {
        const { m } = wordsOf(ctx);
        return html(res, 404, messagePage(ctx, m.unknownPlatformTitle, m.unknownPlatformText, { back: true }));
      }
      return html(res, 200, sandboxProviderPage({ ...ctx, here: `${consentPath(tokenOf(req))}/sandbox/${platform}` }, platform));
    });
    router.post('/:token/sandbox/:platform', async (req, res) => {
      const token = tokenOf(req);
      const platform = PLATFORMS[req.params.platform];
      if (!platform) {
        const ctx: PageContext = { locale: localeOf(req, res) };
        const { m } = wordsOf(ctx);
        return html(res, 404, messagePage(ctx, m.unknownPlatformTitle, m.unknownPlatformText));
      }
      const allow = (req.body as { decision?: unknown } | undefined)?.decision === 'allow';
      await decideSandboxConnection(deps, token, platform, allow);
      // Deny stands in for the provider's `access_denied`, and lands where a real refusal does.
      return res.redirect(303, allow ? `${consentPath(token)}?connected=${platform}` : `${consentPath(token)}/denied/${platform}`);
    });
  }

  router.post('/:token/complete', async (req, res) => {
    await completeConsent(deps, tokenOf(req));
    return res.redirect(303, consentPath(tokenOf(req)));
  });

  const refusals: ErrorRequestHandler = (error, req, res, next) => {
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
  router.use(refusals);
  // A browser only GETs pages (and POSTs the forms above): anything else is an API-style client,
  // which gets the catalogue's JSON not_found from the app, like a wrong method anywhere (D7).
  router.use((req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const ctx: PageContext = { locale: localeOf(req, res) };
    const { m } = wordsOf(ctx);
    return html(res, 404, messagePage(ctx, m.notFoundTitle, m.notFoundText));
  });
  return router;
}

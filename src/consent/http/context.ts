import { parse as parseCookies } from 'cookie';
import type { CookieOptions, Request, Response } from 'express';
import type { ServiceMode } from '../../platform/config.ts';
import { sha256Hex } from '../../platform/crypto.ts';
import { securePage } from '../../platform/http/page-headers.ts';
import type { ConsentDeps, ConsentSession, Platform } from '../consent-flow.ts';
import { isLocale, LOCALES, type Locale } from '../i18n/catalogue.ts';
import { consentPath, messagePage, outcomePage, wordsOf, type PageContext } from '../pages.ts';

export type ConsentPagesDeps = ConsentDeps & { mode: ServiceMode; publicBaseUrl: string };

export const PLATFORMS: readonly Platform[] = ['youtube', 'stripe'];
/**
 * The platform a path or query names, if it is one. A list, not an object's keys: a name every
 * object has (`toString`, `constructor`) must not pass for a platform.
 */
export const platformNamed = (name: unknown): Platform | undefined => PLATFORMS.find((platform) => platform === name);

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
export const bindingCookie = (state: string, secure: boolean) => `${secure ? '__Host-' : ''}consent_oauth_${sha256Hex(state).slice(0, 16)}`;

/**
 * The secret the stop form's token is made from (stop-sharing.ts), one per browser for all its
 * links. `Strict`: only this site's own pages ever post the form. An hour is long enough to read the
 * confirmation page; it is set only when that page is shown, so a one-time verification's creator
 * never gets it. `__Host-` on HTTPS, as the OAuth binding cookie, so no other host can plant one.
 */
const stopCookie = (secure: boolean) => `${secure ? '__Host-' : ''}consent_stop`;
export const STOP_COOKIE_MAX_AGE_MS = 60 * 60 * 1000;

export const cookiesOf = (req: Request) => parseCookies(req.headers.cookie ?? '');
/** A route parameter; Express types those of a handler declared apart from its route loosely. */
const paramOf = (req: Request, name: string): string => {
  const value = (req.params as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : '';
};
export const tokenOf = (req: Request): string => paramOf(req, 'token');
/** The platform a path names, if it is one. */
export const platformOf = (req: Request): Platform | undefined => platformNamed(paramOf(req, 'platform'));

type LinkSession = { verification: { lenderName: string }; registeredLenderName: string | null };

/** What every consent page and action shares, made once per router from its dependencies. */
export interface ConsentPages {
  deps: ConsentPagesDeps;
  /** Strict headers for a page a creator opens from a link, and no Referer, since the URL itself carries the consent token. */
  secure: (res: Response) => Response;
  html: (res: Response, status: number, page: string) => Response;
  /**
   * A production service started without a platform's credentials cannot connect it: its consent
   * page says so in place of the button, rather than a click ending on an error page.
   */
  unavailable: ReadonlySet<Platform>;
  secureCookies: boolean;
  bindingOptions: CookieOptions;
  stopCookieName: string;
  stopCookieOptions: CookieOptions;
  localeOf: (req: Request, res: Response) => Locale;
  /** The context of a page of an existing consent link, with language links back to `here`. */
  linkContext: (req: Request, res: Response, session: LinkSession, here?: string) => PageContext & { token: string };
  /** Pages of a link that asks nothing more of the creator: unknown (404), expired (410), or its outcome. */
  closed: (req: Request, res: Response, session: Exclude<ConsentSession, { kind: 'open' }>) => Response;
}

export function consentPagesOf(deps: ConsentPagesDeps): ConsentPages {
  // Browsers apply form-action to the redirect after a form post, so the providers' sign-in pages are allowed too.
  const formTargets = ["'self'", ...Object.values(deps.providers).map((p) => p.authorizationOrigin)].join(' ');
  const secure = (res: Response) => securePage(res, { formTargets, referrer: 'no-referrer', vary: 'Accept-Language, Cookie' });
  const html = (res: Response, status: number, page: string) => secure(res).status(status).type('html').send(page);
  const secureCookies = deps.publicBaseUrl.startsWith('https:');

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
  const linkContext = (req: Request, res: Response, session: LinkSession, here?: string): PageContext & { token: string } => ({
    locale: localeOf(req, res),
    token: tokenOf(req),
    lenderName: session.verification.lenderName,
    registeredLenderName: session.registeredLenderName,
    here: here ?? consentPath(tokenOf(req)),
  });
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

  return {
    deps,
    secure,
    html,
    unavailable: new Set(deps.mode === 'production' ? PLATFORMS.filter((platform) => !deps.providers[platform]) : []),
    secureCookies,
    bindingOptions: { path: secureCookies ? '/' : '/consent/oauth', httpOnly: true, sameSite: 'lax', secure: secureCookies },
    stopCookieName: stopCookie(secureCookies),
    stopCookieOptions: { path: secureCookies ? '/' : '/consent', httpOnly: true, sameSite: 'strict', secure: secureCookies },
    localeOf,
    linkContext,
    closed,
  };
}

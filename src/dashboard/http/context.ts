import type { CookieOptions, Request, Response } from 'express';
import type { AccountsRepository } from '../../accounts/accounts-repository.ts';
import type { PeerBenchmarkDeps } from '../../benchmarks/peer-benchmark.ts';
import type { ServiceMode } from '../../platform/config.ts';
import type { DomainError } from '../../platform/domain-error.ts';
import { securePage } from '../../platform/http/page-headers.ts';
import type { RateLimits } from '../../platform/http/rate-limit.ts';
import type { Logger } from '../../platform/logger.ts';
import type { VerificationLifecycle } from '../../verifications/verification-lifecycle.ts';
import type { EndpointDeps, PostToEndpoint } from '../../webhooks/endpoints.ts';
import type { DashboardRepository } from '../dashboard-repository.ts';
import type { ActiveSession, DashboardUsersDeps } from '../dashboard-users.ts';
import { messagePage, type Viewer } from '../pages.ts';

export interface DashboardDeps {
  users: DashboardUsersDeps & { users: DashboardRepository };
  /** The same facade, benchmark, webhook and account use cases the API's handlers call. */
  lifecycle: VerificationLifecycle;
  benchmarks: PeerBenchmarkDeps;
  webhooks: EndpointDeps & { wakeDeliveries: () => void; post: PostToEndpoint };
  accounts: Pick<AccountsRepository, 'listKeys' | 'updateLender'>;
  rateLimits: RateLimits;
  mode: ServiceMode;
  /** Cookies are Secure (and `__Host-` named) unless this is a sandbox reached over plain http on the operator's machine. */
  secureCookies: boolean;
  logger: Logger;
}

/** What every page and action of the dashboard shares, made once per router from its dependencies. */
export interface Dashboard {
  deps: DashboardDeps;
  sessionCookie: string;
  loginCookie: string;
  cookieOptions: CookieOptions;
  html: (res: Response, status: number, body: string) => Response;
  /** A message page, with the signed-in user's header when there is a session. */
  refuse: (res: Response, status: number, title: string, message: string) => Response;
}

export function dashboardOf(deps: DashboardDeps): Dashboard {
  const html = (res: Response, status: number, body: string) =>
    securePage(res, { formTargets: "'self'", referrer: 'same-origin', vary: 'Cookie' }).status(status).type('html').send(body);
  return {
    deps,
    sessionCookie: deps.secureCookies ? '__Host-civ_dashboard' : 'civ_dashboard',
    loginCookie: deps.secureCookies ? '__Host-civ_dashboard_login' : 'civ_dashboard_login',
    cookieOptions: { httpOnly: true, secure: deps.secureCookies, sameSite: 'strict', path: '/' },
    html,
    refuse: (res, status, title, message) => {
      const locals = res.locals as Partial<Locals>;
      return html(res, status, messagePage(locals.session ?? null, title, message));
    },
  };
}

/** What the session guard (guard.ts) leaves for the pages behind it. */
export interface Locals {
  session: ActiveSession;
  token: string;
}
export const viewerOf = (res: Response): Viewer => (res.locals as Locals).session;

export const NOTICES: Record<string, string> = {
  deleted: 'The endpoint was deleted.',
  updated: 'The endpoint was changed. Its secret and delivery log are as before.',
  disabled: 'The endpoint is disabled: events from now on are not delivered to it, and its pending deliveries wait.',
  enabled: 'The endpoint is enabled: its held deliveries are being sent.',
  replayed: 'The delivery was queued again; the log shows its attempts.',
  refresh_requested:
    "Refresh requested: the creator's income is read again shortly. Its tape appears in the tape history when it is done; reload the page to see it.",
  monitoring_stopped: "Monitoring stopped: no refresh follows, and the creator's access is revoked at the platforms. The verification keeps its tapes.",
  signed_out: 'You are signed out.',
  deactivated: 'Your dashboard access was ended: your dashboard user or your lender account has been deactivated. Ask your operator.',
};
/** The notice a redirect asked a page to show (`?notice=`), if it is one of NOTICES: not a name every object has. */
export const noticeOf = (req: Request): string | undefined => {
  const name = req.query.notice;
  return typeof name === 'string' && Object.hasOwn(NOTICES, name) ? NOTICES[name] : undefined;
};

export const STATUS_OF_DOMAIN_ERROR: Record<DomainError['kind'], number> = { not_found: 404, conflict: 409, invalid: 400, refused: 422, too_soon: 429 };

export function readCookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** A route parameter; Express types those of a handler declared apart from its route loosely. */
export const param = (req: Request, name: string): string => {
  const value = (req.params as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : '';
};
export const one = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

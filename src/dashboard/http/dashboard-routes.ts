import { createHash, randomBytes } from 'node:crypto';
import express, { type CookieOptions, type ErrorRequestHandler, type Request, type RequestHandler, type Response, type Router } from 'express';
import type { AccountsRepository } from '../../accounts/accounts-repository.ts';
import { parseReturnOrigins } from '../../accounts/return-origins.ts';
import { peerBenchmark, type PeerBenchmarkDeps } from '../../benchmarks/peer-benchmark.ts';
import type { ServiceMode } from '../../platform/config.ts';
import { isDatabaseUnavailable } from '../../platform/db/database.ts';
import { DomainError } from '../../platform/domain-error.ts';
import { securePage } from '../../platform/http/page-headers.ts';
import { PLAN_QUOTAS, quotaFor, type Outcome, type RateLimits } from '../../platform/http/rate-limit.ts';
import type { Logger } from '../../platform/logger.ts';
import { PRODUCT_TYPES, renderableVersions, SCHEMA_VERSIONS, type SchemaVersion } from '../../tape/index.ts';
import { VERIFICATION_STATES } from '../../verifications/state-machine.ts';
import type { VerificationLifecycle } from '../../verifications/verification-lifecycle.ts';
import { listEndpointDeliveries, replayDelivery } from '../../webhooks/deliveries.ts';
import {
  getWebhook,
  listWebhooks,
  registerWebhook,
  removeWebhook,
  revealWebhookSecret,
  rotateWebhookSecret,
  sendTestEvent,
  updateWebhook,
  type EndpointDeps,
  type PostToEndpoint,
} from '../../webhooks/endpoints.ts';
import type { DashboardRepository } from '../dashboard-repository.ts';
import { lookUpSession, normaliseEmail, sameToken, sessionOf, signIn, signOut, type ActiveSession, type DashboardUsersDeps } from '../dashboard-users.ts';
import { PasswordChecks } from '../password-checks.ts';
import {
  accountPage,
  DASHBOARD_CSS,
  messagePage,
  signInPage,
  stopMonitoringPage,
  verificationListPage,
  verificationPage,
  webhookListPage,
  webhookPage,
  type EventName,
  type ListFilters,
  type TapeSummary,
  type Viewer,
} from '../pages.ts';
import { incomeFigures } from '../income-chart.ts';

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

/**
 * Failed sign-ins allowed per email address and per client address (D8's limiter) in a minute:
 * beyond them even the right password waits, which makes guessing useless. Each attempt takes its
 * place in both counters before its password is checked, so a concurrent batch is checked no
 * further than the limit; a successful sign-in gives its place back, so an office behind one
 * address is not locked out by its own staff.
 */
export const SIGN_IN_QUOTA = { perMinute: 10, burst: 10 };
export const SIGN_IN_QUOTA_PER_ADDRESS = { perMinute: 30, burst: 30 };

const SUBSCRIBABLE: readonly EventName[] = ['verification.completed', 'verification.failed', 'verification.expired', 'verification.cancelled', 'tape.updated'];
const NOTICES: Record<string, string> = {
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
const DEACTIVATED_SIGN_IN = 'This dashboard user or its lender account is deactivated, so it cannot sign in. Ask your operator to reactivate it.';

const STATUS_OF_DOMAIN_ERROR: Record<DomainError['kind'], number> = { not_found: 404, conflict: 409, invalid: 400, refused: 422, too_soon: 429 };
const TAPE_ID = /^tap_[A-Za-z0-9]{1,96}$/;
/** How the page leads a refused Refresh now; the lifecycle's own message says the particulars. */
const REFRESH_REFUSED: Partial<Record<DomainError['kind'], string>> = {
  refused: 'Not refreshed: only active monitoring is refreshed.',
  conflict: 'Not refreshed: a refresh is already waiting to run.',
};

function readCookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** A route parameter; Express types those of routes with several handlers loosely. */
const param = (req: Request, name: string): string => {
  const value = (req.params as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : '';
};
const one = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

interface Locals {
  session: ActiveSession;
  token: string;
}
const viewerOf = (res: Response): Viewer => (res.locals as Locals).session;

/** The lender dashboard at `/dashboard` (issue: lender dashboard): server-rendered, signed in with a dashboard user, never an API key. */
export function dashboardRoutes(deps: DashboardDeps): Router {
  const router = express.Router({ strict: true, caseSensitive: true });
  const sessionCookie = deps.secureCookies ? '__Host-civ_dashboard' : 'civ_dashboard';
  const loginCookie = deps.secureCookies ? '__Host-civ_dashboard_login' : 'civ_dashboard_login';
  const cookieOptions: CookieOptions = { httpOnly: true, secure: deps.secureCookies, sameSite: 'strict', path: '/' };
  const html = (res: Response, status: number, body: string) =>
    securePage(res, { formTargets: "'self'", referrer: 'same-origin', vary: 'Cookie' }).status(status).type('html').send(body);
  const refuse = (res: Response, status: number, title: string, message: string) => {
    const locals = res.locals as Partial<Locals>;
    return html(res, status, messagePage(locals.session ?? null, title, message));
  };

  router.use(express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 50 }));

  router.get('/assets/dashboard.css', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.type('text/css').send(DASHBOARD_CSS);
  });

  // A form posted from another site is refused before anything else: browsers say where a request
  // comes from in Sec-Fetch-Site. The per-session token below is what refuses the rest.
  router.post('/{*rest}', (req, res, next) => {
    const site = req.get('sec-fetch-site');
    if (!site || site === 'same-origin' || site === 'none') return next();
    return refuse(res, 403, 'Refused', 'This form was sent from another site.');
  });

  // Sign-in: its form carries a token that must equal a cookie set with the form (double submit),
  // so another site cannot sign a browser in to an account of its choosing.
  const showSignIn = (res: Response, status: number, options: { email?: string; error?: string; notice?: string } = {}) => {
    const loginToken = randomBytes(32).toString('base64url');
    res.cookie(loginCookie, loginToken, { ...cookieOptions, maxAge: 60 * 60 * 1000 });
    return html(res, status, signInPage({ loginToken, ...options }));
  };

  const checks = new PasswordChecks();
  const signInBusy = (res: Response, email: string) => {
    res.setHeader('Retry-After', '5');
    return showSignIn(res, 503, { email, error: 'Too many sign-ins are being checked right now. Try again in a few seconds.' });
  };

  router.get('/sign-in', async (req, res) => {
    if (await sessionOf(deps.users, readCookie(req, sessionCookie))) return res.redirect(303, '/dashboard/verifications');
    return showSignIn(res, 200, { notice: NOTICES[one(req.query.notice) ?? ''] });
  });

  router.post('/sign-in', async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const expected = readCookie(req, loginCookie);
    if (!expected || !sameToken(expected, body._csrf)) {
      return showSignIn(res, 403, { error: 'The sign-in form expired or did not come from this site. Please try again.' });
    }
    const email = normaliseEmail(one(body.email) ?? '');
    const password = one(body.password) ?? '';
    if (!checks.hasRoom) return signInBusy(res, email);
    // The address as looked up, hashed: one fixed-length counter per address, however it is spelt.
    const counters = [
      { subject: `dashboard-sign-in:email:${createHash('sha256').update(email).digest('base64url')}`, quota: SIGN_IN_QUOTA },
      { subject: `dashboard-sign-in:ip:${req.ip ?? 'unknown'}`, quota: SIGN_IN_QUOTA_PER_ADDRESS },
    ];
    const reserved: Array<(typeof counters)[number] & { at: number; outcome: Outcome }> = [];
    const giveBack = () => Promise.all(reserved.map(({ subject, quota, ...counted }) => deps.rateLimits.refund(subject, quota, counted)));
    for (const counter of counters) {
      const at = Date.now();
      const outcome = await deps.rateLimits.consume(counter.subject, counter.quota);
      if (!outcome.allowed) {
        await giveBack();
        // Refused by the one-second burst window while the minute's attempts are used up too: the
        // minute is what to wait for.
        const minuteUsedUp = outcome.minute.remainingPoints <= 0 ? outcome.minute.msBeforeNext : 0;
        const seconds = Math.max(1, Math.ceil(Math.max(outcome.retryAfterMs, minuteUsedUp) / 1000));
        res.setHeader('Retry-After', String(seconds));
        return showSignIn(res, 429, { email, error: `Too many failed sign-in attempts. Try again in ${seconds} seconds.` });
      }
      reserved.push({ ...counter, at, outcome });
    }
    const outcome = await checks.run(() => signIn(deps.users, email, password));
    if (outcome === 'busy') {
      await giveBack();
      return signInBusy(res, email);
    }
    if ('refused' in outcome) {
      if (outcome.refused === 'deactivated') return showSignIn(res, 403, { email, error: DEACTIVATED_SIGN_IN });
      return showSignIn(res, 401, { email, error: 'That email and password do not match a dashboard user.' });
    }
    await giveBack();
    const { signedIn } = outcome;
    res.clearCookie(loginCookie, cookieOptions);
    // Max-Age rather than Expires: the browser's clock need not agree with the server's.
    res.cookie(sessionCookie, signedIn.token, { ...cookieOptions, maxAge: new Date(signedIn.expiresAt).getTime() - deps.users.now().getTime() });
    deps.logger.info({ dashboardUser: signedIn.user.id, lenderId: signedIn.user.lenderId }, 'dashboard sign-in');
    return res.redirect(303, '/dashboard/verifications');
  });

  // Every other page needs a live session; every form of it its session's token.
  const requireSession: RequestHandler = async (req, res, next) => {
    try {
      const token = readCookie(req, sessionCookie);
      const session = await lookUpSession(deps.users, token);
      if (session === 'deactivated') {
        res.clearCookie(sessionCookie, cookieOptions);
        if (req.method === 'GET' || req.method === 'HEAD') return res.redirect(303, '/dashboard/sign-in?notice=deactivated');
        return refuse(res, 403, 'Signed out', NOTICES.deactivated!);
      }
      if (!session || !token) {
        if (req.method === 'GET' || req.method === 'HEAD') return res.redirect(303, '/dashboard/sign-in');
        return refuse(res, 403, 'Signed out', 'Your session has ended. Sign in again, then repeat what you were doing.');
      }
      Object.assign(res.locals, { session, token } satisfies Locals);
      if (req.method === 'POST' && !sameToken(session.csrfToken, (req.body as Record<string, unknown> | undefined)?._csrf)) {
        return refuse(res, 403, 'Refused', 'This form is not from your current session. Reload the page and try again.');
      }
      return next();
    } catch (error) {
      return next(error);
    }
  };
  const adminOnly: RequestHandler = (_req, res, next) => {
    if (viewerOf(res).user.role === 'admin') return next();
    return refuse(res, 403, 'Admins only', 'Your dashboard role is viewer: it reads everything and changes nothing. Ask an admin of your account.');
  };
  router.use(requireSession);

  router.post('/sign-out', async (_req, res) => {
    await signOut(deps.users, (res.locals as Locals).token);
    res.clearCookie(sessionCookie, cookieOptions);
    return res.redirect(303, '/dashboard/sign-in?notice=signed_out');
  });

  router.get('/', (_req, res) => res.redirect(303, '/dashboard/verifications'));

  // Verifications

  router.get('/verifications', async (req, res) => {
    const viewer = viewerOf(res);
    const filters: ListFilters = {};
    for (const name of ['status', 'obligor_reference', 'product_type', 'created_gte', 'created_lt'] as const) {
      const value = one(req.query[name])?.trim();
      if (value) filters[name] = value;
    }
    const limit = one(req.query.limit);
    if (limit && /^\d{1,3}$/.test(limit)) filters.limit = Math.min(Math.max(Number(limit), 1), 100);
    const page = { filters, statuses: VERIFICATION_STATES, productTypes: PRODUCT_TYPES };
    try {
      if (filters.status && !(VERIFICATION_STATES as readonly string[]).includes(filters.status))
        throw new DomainError('invalid', `There is no status "${filters.status}".`);
      if (filters.product_type && !(PRODUCT_TYPES as readonly string[]).includes(filters.product_type)) {
        throw new DomainError('invalid', `There is no product type "${filters.product_type}".`);
      }
      type ListQuery = Parameters<VerificationLifecycle['listForLender']>[1];
      const { status, ...others } = filters;
      const list = await deps.lifecycle.listForLender(viewer.lender.id, {
        ...(others as Omit<ListQuery, 'status'>),
        // The page's form picks one state; the API takes several.
        status: status ? [status as NonNullable<ListQuery['status']>[number]] : undefined,
        starting_after: one(req.query.starting_after),
      });
      return html(res, 200, verificationListPage(viewer, { ...page, data: list.data, hasMore: list.has_more }));
    } catch (error) {
      if (!(error instanceof DomainError) || error.kind !== 'invalid') throw error;
      return html(res, 400, verificationListPage(viewer, { ...page, data: [], hasMore: false, error: error.message }));
    }
  });

  /** A tape id from a query, checked before it reaches the lifecycle. */
  const tapeIdOf = (req: Request): string | undefined => {
    const tapeId = one(req.query.tape_id);
    if (tapeId !== undefined && !TAPE_ID.test(tapeId)) throw new DomainError('invalid', `There is no tape "${tapeId}".`);
    return tapeId;
  };

  /** Every tape of a verification, newest first: the history is walked page by page, however long. */
  const tapeHistory = async (lenderId: string, verificationId: string): Promise<TapeSummary[]> => {
    const tapes: TapeSummary[] = [];
    for (let after: string | undefined; ;) {
      const page = await deps.lifecycle.tapeHistoryForLender(lenderId, verificationId, { limit: 100, starting_after: after });
      tapes.push(...page.data);
      after = page.data.at(-1)?.tape_id;
      if (!page.has_more || !after) return tapes;
    }
  };

  const verificationDetail = async (req: Request, res: Response, status: number, extra: { error?: string } = {}) => {
    const viewer = viewerOf(res);
    const lenderId = viewer.lender.id;
    const verification = await deps.lifecycle.findForLender(lenderId, param(req, 'id'));
    const timeline = verification && (await deps.lifecycle.timelineForLender(lenderId, verification.verification_id));
    if (!verification || !timeline) throw new DomainError('not_found', `There is no verification ${param(req, 'id')} in your account.`);
    const id = verification.verification_id;
    const completed = verification.status === 'completed';
    // A form's answer shows the latest tape whatever the page was showing.
    const tapeId = req.method === 'GET' ? tapeIdOf(req) : undefined;
    const history = completed ? await tapeHistory(lenderId, id) : [];
    const tape = completed ? (await deps.lifecycle.tapeResponseForLender(lenderId, id, '2.0.0', tapeId)).tape : null;
    const shown = tapeId === undefined ? undefined : history.find((t) => t.tape_id === tapeId);
    const benchmark = completed ? await peerBenchmark(deps.benchmarks, lenderId, id) : null;
    const income = completed ? await deps.lifecycle.monthlyIncomeForLender(lenderId, id) : null;
    // Only the versions this tape can be rendered at: a 1.x of a product type added in 2.0.0 is refused (P6).
    const versions = tape ? [...renderableVersions(tape.eligibility.product_type)].reverse() : [];
    return html(
      res,
      status,
      verificationPage(viewer, {
        verification,
        timeline,
        tape,
        benchmark,
        versions,
        history,
        earlier: shown?.latest ? undefined : shown,
        income: income && incomeFigures(income),
        notice: req.method === 'GET' ? NOTICES[one(req.query.notice) ?? ''] : undefined,
        ...extra,
      }),
    );
  };
  router.get('/verifications/:id', (req, res) => verificationDetail(req, res, 200));

  // Refresh now and Stop monitoring are admin-only, as every other change made from the dashboard
  // is (endpoints, secrets, test events, replays, return origins): a viewer reads. Both act on the
  // creator's data: a refresh reads their income again and uses the one refresh a day on demand,
  // and stopping revokes their grants for good.
  router.post('/verifications/:id/refresh', adminOnly, async (req, res) => {
    const viewer = viewerOf(res);
    const id = param(req, 'id');
    try {
      await deps.lifecycle.requestRefresh(viewer.lender.id, id);
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      if (error.kind === 'too_soon') {
        const seconds = error.retryAfterSeconds ?? 1;
        res.setHeader('Retry-After', String(seconds));
        const next = new Date(deps.users.now().getTime() + seconds * 1000).toISOString();
        const message = `Not refreshed: Refresh now works once a day. The next is possible from ${next.slice(0, 16).replace('T', ' ')} UTC.`;
        return verificationDetail(req, res, 429, { error: message });
      }
      const lead = REFRESH_REFUSED[error.kind];
      if (!lead) throw error;
      return verificationDetail(req, res, STATUS_OF_DOMAIN_ERROR[error.kind], { error: `${lead} ${error.message}` });
    }
    deps.logger.info({ dashboardUser: viewer.user.id, verificationId: id }, 'dashboard: monitoring refresh requested');
    return res.redirect(303, `/dashboard/verifications/${encodeURIComponent(id)}?notice=refresh_requested#monitoring`);
  });

  /** The confirmation step: a GET from the verification page's button, or a post that did not confirm. */
  const confirmStop = async (req: Request, res: Response) => {
    const viewer = viewerOf(res);
    const verification = await deps.lifecycle.findForLender(viewer.lender.id, param(req, 'id'));
    if (!verification) throw new DomainError('not_found', `There is no verification ${param(req, 'id')} in your account.`);
    if (!verification.monitoring)
      throw new DomainError('refused', `Verification ${verification.verification_id} was created without monitoring; there is nothing to stop.`);
    if (verification.monitoring.state === 'ended')
      return res.redirect(303, `/dashboard/verifications/${encodeURIComponent(verification.verification_id)}#monitoring`);
    return html(res, 200, stopMonitoringPage(viewer, verification));
  };
  router.get('/verifications/:id/monitoring/stop', adminOnly, confirmStop);

  router.post('/verifications/:id/monitoring/stop', adminOnly, async (req, res) => {
    if (one((req.body as Record<string, unknown>).confirm) !== 'yes') return confirmStop(req, res);
    const viewer = viewerOf(res);
    const verification = await deps.lifecycle.stopMonitoring(viewer.lender.id, param(req, 'id'));
    deps.logger.info({ dashboardUser: viewer.user.id, verificationId: verification.verification_id }, 'dashboard: monitoring stopped');
    return res.redirect(303, `/dashboard/verifications/${encodeURIComponent(verification.verification_id)}?notice=monitoring_stopped#monitoring`);
  });

  router.get('/verifications/:id/tape.json', async (req, res) => {
    const version = one(req.query.schema_version) ?? '2.0.0';
    if (!(SCHEMA_VERSIONS as readonly string[]).includes(version)) throw new DomainError('invalid', `There is no tape schema version "${version}".`);
    const tapeId = tapeIdOf(req);
    const { tape } = await deps.lifecycle.tapeResponseForLender(viewerOf(res).lender.id, param(req, 'id'), version as SchemaVersion, tapeId);
    res.setHeader('Content-Disposition', `attachment; filename="risk-tape-${tape.verification_id}${tapeId ? `-${tapeId}` : ''}-${version}.json"`);
    res.setHeader('Cache-Control', 'no-store');
    return res.type('application/json').send(JSON.stringify(tape, null, 2));
  });

  // Webhooks

  const webhookList = async (req: Request, res: Response, status: number, extra: Partial<Parameters<typeof webhookListPage>[1]> = {}) => {
    const viewer = viewerOf(res);
    const list = await listWebhooks(deps.webhooks, viewer.lender.id, { starting_after: one(req.query.starting_after) });
    return html(
      res,
      status,
      webhookListPage(viewer, { data: list.data, hasMore: list.has_more, events: SUBSCRIBABLE, notice: NOTICES[one(req.query.notice) ?? ''], ...extra }),
    );
  };
  router.get('/webhooks', (req, res) => webhookList(req, res, 200));

  /** The events ticked in a form, at least one. */
  const eventsOf = (body: Record<string, unknown>): EventName[] => {
    const events = (Array.isArray(body.events) ? body.events : [body.events]).filter((name): name is EventName => SUBSCRIBABLE.includes(name as EventName));
    if (events.length === 0) throw new DomainError('invalid', 'Choose at least one event.');
    return events;
  };

  router.post('/webhooks', adminOnly, async (req, res) => {
    const body = req.body as Record<string, unknown>;
    const events = eventsOf(body);
    const { secret, ...webhook } = await registerWebhook(deps.webhooks, viewerOf(res).lender.id, { url: one(body.url) ?? '', events });
    return webhookList(req, res, 201, { created: { webhook, secret } });
  });

  const webhookDetail = async (req: Request, res: Response, status: number, extra: Partial<Parameters<typeof webhookPage>[1]> = {}) => {
    const viewer = viewerOf(res);
    const id = param(req, 'id');
    const webhook = await getWebhook(deps.webhooks, viewer.lender.id, id);
    const log = await listEndpointDeliveries(deps.webhooks, viewer.lender.id, id, {
      starting_after: req.method === 'GET' ? one(req.query.starting_after) : undefined,
    });
    return html(
      res,
      status,
      webhookPage(viewer, {
        webhook,
        deliveries: log.deliveries,
        hasMore: log.hasMore,
        events: SUBSCRIBABLE,
        notice: NOTICES[one(req.query.notice) ?? ''],
        ...extra,
      }),
    );
  };
  router.get('/webhooks/:id', (req, res) => webhookDetail(req, res, 200));

  router.post('/webhooks/:id/secret', adminOnly, async (req, res) => {
    const { secret } = await revealWebhookSecret(deps.webhooks, viewerOf(res).lender.id, param(req, 'id'));
    deps.logger.info({ dashboardUser: viewerOf(res).user.id, webhookId: param(req, 'id') }, 'dashboard: webhook secret shown');
    return webhookDetail(req, res, 200, { secret: { label: 'The current signing secret. Receivers verify X-Service-Signature with it.', value: secret } });
  });

  router.post('/webhooks/:id/rotate-secret', adminOnly, async (req, res) => {
    const overlap = one((req.body as Record<string, unknown>).overlap_seconds) ?? '86400';
    if (!/^(0|3600|86400|604800)$/.test(overlap)) throw new DomainError('invalid', 'Choose one of the offered overlaps.');
    const rotated = await rotateWebhookSecret(deps.webhooks, viewerOf(res).lender.id, param(req, 'id'), Number(overlap));
    deps.logger.info({ dashboardUser: viewerOf(res).user.id, webhookId: param(req, 'id') }, 'dashboard: webhook secret rotated');
    const until = rotated.previous_secret_expires_at
      ? `The previous secret keeps signing beside it until ${rotated.previous_secret_expires_at}.`
      : 'The previous secret no longer signs.';
    return webhookDetail(req, res, 200, { secret: { label: `The new signing secret. ${until}`, value: rotated.secret } });
  });

  router.post('/webhooks/:id/test', adminOnly, async (req, res) => {
    const outcome = await sendTestEvent(deps.webhooks, viewerOf(res).lender.id, param(req, 'id'));
    const answer = outcome.status_code === null ? `no answer (${outcome.error ?? 'unknown error'})` : `HTTP ${outcome.status_code}`;
    const test = `Test event ${outcome.event_id} ${outcome.succeeded ? 'was acknowledged' : 'was not acknowledged'}: ${answer} in ${outcome.duration_ms} ms.`;
    return webhookDetail(req, res, 200, { test });
  });

  router.post('/webhooks/:id/update', adminOnly, async (req, res) => {
    const body = req.body as Record<string, unknown>;
    const webhook = await updateWebhook(deps.webhooks, viewerOf(res).lender.id, param(req, 'id'), { url: one(body.url) ?? '', events: eventsOf(body) });
    deps.logger.info({ dashboardUser: viewerOf(res).user.id, webhookId: webhook.webhook_id }, 'dashboard: webhook endpoint changed');
    return res.redirect(303, `/dashboard/webhooks/${encodeURIComponent(webhook.webhook_id)}?notice=updated`);
  });

  router.post('/webhooks/:id/enabled', adminOnly, async (req, res) => {
    const value = one((req.body as Record<string, unknown>).enabled);
    if (value !== 'true' && value !== 'false') throw new DomainError('invalid', 'Choose to enable or to disable the endpoint.');
    const webhook = await updateWebhook(deps.webhooks, viewerOf(res).lender.id, param(req, 'id'), { enabled: value === 'true' });
    deps.logger.info(
      { dashboardUser: viewerOf(res).user.id, webhookId: webhook.webhook_id, enabled: webhook.enabled },
      'dashboard: webhook endpoint enabled or disabled',
    );
    return res.redirect(303, `/dashboard/webhooks/${encodeURIComponent(webhook.webhook_id)}?notice=${webhook.enabled ? 'enabled' : 'disabled'}`);
  });

  router.post('/webhooks/:id/delete', adminOnly, async (req, res) => {
    await removeWebhook(deps.webhooks, viewerOf(res).lender.id, param(req, 'id'));
    return res.redirect(303, '/dashboard/webhooks?notice=deleted');
  });

  router.post('/webhooks/:id/deliveries/:deliveryId/replay', adminOnly, async (req, res) => {
    const replayDeps = { webhooks: deps.webhooks.webhooks, now: deps.webhooks.now, wake: deps.webhooks.wakeDeliveries };
    await replayDelivery(replayDeps, viewerOf(res).lender.id, param(req, 'id'), param(req, 'deliveryId'));
    return res.redirect(303, `/dashboard/webhooks/${encodeURIComponent(param(req, 'id'))}?notice=replayed`);
  });

  // Account

  router.get('/account', async (req, res) => {
    const viewer = viewerOf(res);
    const { lender } = viewer;
    const records = await deps.accounts.listKeys(lender.id);
    const keys = await Promise.all(
      records.map(async (key) => {
        const quota = quotaFor({ keyId: key.id, role: key.role, lender, keyRateLimit: key.rateLimit ?? null }, deps.mode);
        return { ...key, quota, usedThisMinute: key.revokedAt ? 0 : (await deps.rateLimits.usage(`key:${key.id}`, quota)).used };
      }),
    );
    const base = PLAN_QUOTAS[deps.mode === 'sandbox' ? 'sandbox' : lender.plan];
    const custom = Boolean(lender.rateLimitPerMinute && lender.rateLimitBurst);
    const plan = {
      name: deps.mode === 'sandbox' ? `${lender.plan} (sandbox limits)` : lender.plan,
      perMinute: custom ? lender.rateLimitPerMinute! : base.perMinute,
      burst: custom ? lender.rateLimitBurst! : base.burst,
      custom,
    };
    const notice = one(req.query.notice) === 'return-origins' ? 'Return origins saved.' : undefined;
    return html(res, 200, accountPage(viewer, { plan, keys, users: await deps.users.users.listUsers(lender.id), notice }));
  });

  router.post('/account/return-origins', adminOnly, async (req, res) => {
    const text = one((req.body as Record<string, unknown>).origins) ?? '';
    let origins: string[];
    try {
      origins = parseReturnOrigins(text.split(/\r?\n/));
    } catch (error) {
      throw new DomainError('invalid', `Return origins: ${(error as Error).message}.`);
    }
    await deps.accounts.updateLender(viewerOf(res).lender.id, { returnOrigins: origins }, deps.users.now().toISOString());
    return res.redirect(303, '/dashboard/account?notice=return-origins');
  });

  const refusals: ErrorRequestHandler = (error, _req, res, next) => {
    if (res.headersSent) return next(error);
    if (error instanceof DomainError) {
      const title = { not_found: 'Not found', conflict: 'Conflict', invalid: 'Please check the form', refused: 'Not possible', too_soon: 'Not yet' }[
        error.kind
      ];
      return refuse(res, STATUS_OF_DOMAIN_ERROR[error.kind], title, error.message);
    }
    if (isDatabaseUnavailable(error)) {
      deps.logger.warn({ err: error }, 'dashboard: database unavailable');
      res.setHeader('Retry-After', '5');
      return refuse(res, 503, 'Temporarily unavailable', 'The service cannot reach its database right now. Try again in a few seconds.');
    }
    deps.logger.error({ err: error }, 'dashboard page failed');
    return refuse(res, 500, 'Something went wrong', 'The page could not be shown. The error was logged; try again.');
  };
  router.use(refusals);
  router.use((req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    return refuse(res, 404, 'Not found', 'There is no such dashboard page.');
  });
  return router;
}

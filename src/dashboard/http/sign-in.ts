import { createHash, randomBytes } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import type { Outcome } from '../../platform/http/rate-limit.ts';
import { normaliseEmail, sameToken, sessionOf, signIn } from '../dashboard-users.ts';
import { PasswordChecks } from '../password-checks.ts';
import { signInPage } from '../pages.ts';
import { noticeOf, one, readCookie, type Dashboard } from './context.ts';

/**
 * Failed sign-ins allowed per email address and per client address (D8's limiter) in a minute:
 * beyond them even the right password waits, which makes guessing useless. Each attempt takes its
 * place in both counters before its password is checked, so a concurrent batch is checked no
 * further than the limit; a successful sign-in gives its place back, so an office behind one
 * address is not locked out by its own staff.
 */
export const SIGN_IN_QUOTA = { perMinute: 10, burst: 10 };
export const SIGN_IN_QUOTA_PER_ADDRESS = { perMinute: 30, burst: 30 };

const DEACTIVATED_SIGN_IN = 'This dashboard user or its lender account is deactivated, so it cannot sign in. Ask your operator to reactivate it.';

/**
 * The sign-in form carries a token that must equal a cookie set with the form (double submit), so
 * another site cannot sign a browser in to an account of its choosing.
 */
function showSignIn(dashboard: Dashboard, res: Response, status: number, options: { email?: string; error?: string; notice?: string } = {}) {
  const loginToken = randomBytes(32).toString('base64url');
  res.cookie(dashboard.loginCookie, loginToken, { ...dashboard.cookieOptions, maxAge: 60 * 60 * 1000 });
  return dashboard.html(res, status, signInPage({ loginToken, ...options }));
}

export function signInForm(dashboard: Dashboard): RequestHandler {
  const { deps, sessionCookie } = dashboard;
  return async (req, res) => {
    if (await sessionOf(deps.users, readCookie(req, sessionCookie))) return res.redirect(303, '/dashboard/verifications');
    return showSignIn(dashboard, res, 200, { notice: noticeOf(req) });
  };
}

export function signInSubmit(dashboard: Dashboard): RequestHandler {
  const { deps, sessionCookie, loginCookie, cookieOptions } = dashboard;
  // One queue for every sign-in this router takes: the bound on password checks is on them all.
  const checks = new PasswordChecks();
  const signInBusy = (res: Response, email: string) => {
    res.setHeader('Retry-After', '5');
    return showSignIn(dashboard, res, 503, { email, error: 'Too many sign-ins are being checked right now. Try again in a few seconds.' });
  };
  return async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const expected = readCookie(req, loginCookie);
    if (!expected || !sameToken(expected, body._csrf)) {
      return showSignIn(dashboard, res, 403, { error: 'The sign-in form expired or did not come from this site. Please try again.' });
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
        return showSignIn(dashboard, res, 429, { email, error: `Too many failed sign-in attempts. Try again in ${seconds} seconds.` });
      }
      reserved.push({ ...counter, at, outcome });
    }
    const outcome = await checks.run(() => signIn(deps.users, email, password));
    if (outcome === 'busy') {
      await giveBack();
      return signInBusy(res, email);
    }
    if ('refused' in outcome) {
      if (outcome.refused === 'deactivated') return showSignIn(dashboard, res, 403, { email, error: DEACTIVATED_SIGN_IN });
      return showSignIn(dashboard, res, 401, { email, error: 'That email and password do not match a dashboard user.' });
    }
    await giveBack();
    const { signedIn } = outcome;
    res.clearCookie(loginCookie, cookieOptions);
    // Max-Age rather than Expires: the browser's clock need not agree with the server's.
    res.cookie(sessionCookie, signedIn.token, { ...cookieOptions, maxAge: new Date(signedIn.expiresAt).getTime() - deps.users.now().getTime() });
    deps.logger.info({ dashboardUser: signedIn.user.id, lenderId: signedIn.user.lenderId }, 'dashboard sign-in');
    return res.redirect(303, '/dashboard/verifications');
  };
}

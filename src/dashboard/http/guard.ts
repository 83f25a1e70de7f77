import type { RequestHandler } from 'express';
import { lookUpSession, sameToken } from '../dashboard-users.ts';
import { NOTICES, readCookie, viewerOf, type Dashboard, type Locals } from './context.ts';

/**
 * A form posted from another site is refused before anything else: browsers say where a request
 * comes from in Sec-Fetch-Site. The per-session token of `requireSession` is what refuses the rest.
 */
export function refuseCrossSite({ refuse }: Dashboard): RequestHandler {
  return (req, res, next) => {
    const site = req.get('sec-fetch-site');
    if (!site || site === 'same-origin' || site === 'none') return next();
    return refuse(res, 403, 'Refused', 'This form was sent from another site.');
  };
}

/** Every page but sign-in needs a live session; every form of it its session's token. */
export function requireSession({ deps, sessionCookie, cookieOptions, refuse }: Dashboard): RequestHandler {
  return async (req, res, next) => {
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
}

/**
 * Every change made from the dashboard is an admin's (endpoints, secrets, test events, replays,
 * return origins, refreshes and stops of monitoring): a viewer reads.
 */
export function adminOnly({ refuse }: Dashboard): RequestHandler {
  return (_req, res, next) => {
    if (viewerOf(res).user.role === 'admin') return next();
    return refuse(res, 403, 'Admins only', 'Your dashboard role is viewer: it reads everything and changes nothing. Ask an admin of your account.');
  };
}

import type { RequestHandler } from 'express';
import { signOut } from '../dashboard-users.ts';
import type { Dashboard, Locals } from './context.ts';

export function signOutSubmit({ deps, sessionCookie, cookieOptions }: Dashboard): RequestHandler {
  return async (_req, res) => {
    await signOut(deps.users, (res.locals as Locals).token);
    res.clearCookie(sessionCookie, cookieOptions);
    return res.redirect(303, '/dashboard/sign-in?notice=signed_out');
  };
}

import type { RequestHandler } from 'express';
import { completeConsent } from '../consent-flow.ts';
import { consentPath } from '../pages.ts';
import { tokenOf, type ConsentPages } from './context.ts';

/** The creator's consent given: the link's page then shows the outcome. */
export function complete({ deps }: ConsentPages): RequestHandler {
  return async (req, res) => {
    await completeConsent(deps, tokenOf(req));
    return res.redirect(303, consentPath(tokenOf(req)));
  };
}

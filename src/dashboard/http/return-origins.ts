import type { RequestHandler } from 'express';
import { parseReturnOrigins } from '../../accounts/return-origins.ts';
import { DomainError } from '../../platform/domain-error.ts';
import { one, viewerOf, type Dashboard } from './context.ts';

/** The origins a verification's `return_url` may lead to, one a line of the account page's form. */
export function returnOriginsSave({ deps }: Dashboard): RequestHandler {
  return async (req, res) => {
    const text = one((req.body as Record<string, unknown>).origins) ?? '';
    let origins: string[];
    try {
      origins = parseReturnOrigins(text.split(/\r?\n/));
    } catch (error) {
      throw new DomainError('invalid', `Return origins: ${(error as Error).message}.`);
    }
    await deps.accounts.updateLender(viewerOf(res).lender.id, { returnOrigins: origins }, deps.users.now().toISOString());
    return res.redirect(303, '/dashboard/account?notice=return-origins');
  };
}

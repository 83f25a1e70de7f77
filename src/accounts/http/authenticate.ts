import type { RequestHandler } from 'express';
import '../../platform/http/request-context.ts';
import type { AccountsRepository } from '../accounts-repository.ts';
import { hashApiKey, isWellFormedApiKey, keyBelongsToMode } from '../api-keys.ts';
import { isAllowed } from '../ip-allowlist.ts';
import type { ServiceMode } from '../../platform/config.ts';
import { ApiError } from '../../platform/http/error-catalogue.ts';
import { limitAnonymous, type RateLimits } from '../../platform/http/rate-limit.ts';

const unauthorized = (message: string) => new ApiError('unauthorized', message, { headers: { 'WWW-Authenticate': 'Bearer realm="api"' } });

/**
 * Resolves `Authorization: Bearer <key>` to a principal (section 5). Runs before validation and
 * before the rate limiter, so every /api/v1 request is attributed to a key or refused with 401.
 * The key is looked up by hash on every request, so a revocation takes effect on the next one (D9).
 */
export function authenticate(deps: { accounts: AccountsRepository; mode: ServiceMode; limits: RateLimits }): RequestHandler {
  return async (req, res, next) => {
    try {
      const header = req.get('authorization');
      if (header === undefined || header.trim() === '') {
        throw unauthorized('Missing Authorization header; send "Authorization: Bearer <API_KEY>".');
      }
      const match = /^Bearer +(\S+)$/i.exec(header.trim());
      if (!match) throw unauthorized('Malformed Authorization header; expected "Bearer <API_KEY>".');
      const key = match[1]!;
      if (!isWellFormedApiKey(key)) throw unauthorized('Malformed API key.');
      if (!keyBelongsToMode(key, deps.mode)) {
        throw unauthorized(`This is a ${deps.mode === 'production' ? 'sandbox' : 'production'} key; this deployment runs in ${deps.mode} mode.`);
      }
      const principal = await deps.accounts.findPrincipalByKeyHash(hashApiKey(key));
      if (!principal) throw unauthorized('Unknown or revoked API key, or its lender account is deactivated.');
      // The IP allowlist exists only in production (D10); the sandbox is open by design.
      if (deps.mode === 'production' && !isAllowed(req.ip, principal.lender.ipAllowlist)) {
        throw new ApiError('forbidden', "This address is not on the lender account's IP allowlist.");
      }
      req.principal = principal;
      next();
    } catch (error) {
      let answer: unknown = error;
      // Failed attempts count against the client address (D8), so guessing keys is slow; over that
      // quota the client is told so instead.
      if (error instanceof ApiError && error.code === 'unauthorized') {
        await limitAnonymous(deps.limits, req, res).catch((refusal: unknown) => {
          answer = refusal;
        });
      }
      next(answer);
    }
  };
}

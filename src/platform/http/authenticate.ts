import type { RequestHandler } from 'express';
import type { AccountsRepository } from '../../accounts/accounts-repository.ts';
import { hashApiKey, isWellFormedApiKey, keyBelongsToMode } from '../../accounts/api-keys.ts';
import { isAllowed } from '../../accounts/ip-allowlist.ts';
import type { Principal } from '../../accounts/model.ts';
import type { ServiceMode } from '../config.ts';
import { ApiError } from './error-catalogue.ts';
import { limitAnonymous, type RateLimits } from './rate-limit.ts';

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
    requestId?: string;
  }
}

const unauthorized = (message: string) =>
  new ApiError('unauthorized', message, { headers: { 'WWW-Authenticate': 'Bearer realm="api"' } });

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
      if (!principal) throw unauthorized('Unknown or revoked API key.');
      // The IP allowlist exists only in production (D10); the sandbox is open by design.
      if (deps.mode === 'production' && !isAllowed(req.ip, principal.lender.ipAllowlist)) {
        throw new ApiError('forbidden', 'This address is not on the lender account\'s IP allowlist.');
      }
      req.principal = principal;
      next();
    } catch (error) {
      // Failed attempts count against the client address (D8), so guessing keys is slow.
      if (error instanceof ApiError && error.code === 'unauthorized') {
        await limitAnonymous(deps.limits, req, res).catch((refusal) => (error = refusal));
      }
      next(error);
    }
  };
}

/**
 * The security handler express-openapi-validator calls for `bearerAuth`: the spec lists the roles
 * allowed for each operation as the requirement's scopes (OpenAPI 3.1 allows role names there).
 */
export function requireRole(req: { principal?: Principal }, roles: string[]): true {
  if (!req.principal) throw { status: 401, message: 'Missing Authorization header; send "Authorization: Bearer <API_KEY>".' };
  if (roles.length > 0 && !roles.includes(req.principal.role)) {
    throw { status: 403, message: `This operation needs a key with the ${roles.join(' or ')} role; this key has the ${req.principal.role} role.` };
  }
  return true;
}

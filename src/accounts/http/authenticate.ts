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
export function authenticate(deps: { accounts: AccountsRepository; mode: ServiceMode; limits: RateLimits; now?: () => Date }): RequestHandler {
  const recordUse = keyUseRecorder(deps.accounts, deps.now ?? (() => new Date()));
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
      recordUse(principal.keyId);
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

/** A key's last use is written at most this often per process: the dashboard shows it to the minute. */
export const KEY_USE_RECORD_INTERVAL_MS = 60_000;

/**
 * Records keys' last use off the request's path: a map lookup per request, and a write (not awaited)
 * only when this process has not written one for the key within the interval. A failed write is
 * dropped: the time is informative, and the next minute's request writes it again.
 */
export function keyUseRecorder(accounts: Pick<AccountsRepository, 'recordKeyUse'>, now: () => Date): (keyId: string) => void {
  const recorded = new Map<string, number>();
  return (keyId) => {
    const at = now();
    const last = recorded.get(keyId);
    if (last !== undefined && at.getTime() - last < KEY_USE_RECORD_INTERVAL_MS) return;
    recorded.set(keyId, at.getTime());
    // Never a reason to fail the request it records, whether the write fails at once or later.
    Promise.resolve()
      .then(() => accounts.recordKeyUse(keyId, at.toISOString()))
      .catch(() => recorded.delete(keyId));
  };
}

import type { Request, RequestHandler } from 'express';
import '../../platform/http/request-context.ts';
import type { AccountsRepository } from '../accounts-repository.ts';
import { hashApiKey, isWellFormedApiKey, keyBelongsToMode } from '../api-keys.ts';
import { isAllowed } from '../ip-allowlist.ts';
import type { ServiceMode } from '../../platform/config.ts';
import { ApiError } from '../../platform/http/error-catalogue.ts';
import { limitAnonymous, quotaFor, type Outcome as RateLimitOutcome, type Quota, type RateLimits } from '../../platform/http/rate-limit.ts';
import type { Principal } from '../../platform/principal.ts';

const unauthorized = (message: string) => new ApiError('unauthorized', message, { headers: { 'WWW-Authenticate': 'Bearer realm="api"' } });

/**
 * Resolves `Authorization: Bearer <key>` to a principal (section 5). Runs before validation and
 * before the rate limiter, so every /api/v1 request is attributed to a key or refused with 401.
 * The key is looked up by hash on every request, so a revocation takes effect on the next one (D9);
 * on PostgreSQL the same statement counts the request against the key's quota.
 */
export function authenticate(deps: { accounts: AccountsRepository; mode: ServiceMode; limits: RateLimits; now?: () => Date }): RequestHandler {
  const recordUse = keyUseRecorder(deps.accounts, deps.now ?? (() => new Date()));
  // The IP allowlist exists only in production (D10); the sandbox is open by design. The client's
  // address is worked out only for a lender with an allowlist (behind proxies, `req.ip` parses
  // X-Forwarded-For on every read).
  const allowedFrom = (principal: Principal, req: Request) =>
    deps.mode !== 'production' || principal.lender.ipAllowlist.length === 0 || isAllowed(req.ip, principal.lender.ipAllowlist);
  const quotas = new QuotaMemory();

  /**
   * PostgreSQL: the key's principal and the request's count in its rate-limit windows, in one
   * statement. Which rows to count in depends on the key's quota, remembered from the key's last
   * request; the principal still comes from the database on every request (D9), and when its quota
   * has changed since (an operator's `key limit` or a plan change) the request is counted again under
   * the new quota by the rate limiter. A key not yet seen by this process is looked up first. A
   * request from outside the remembered allowlist is not counted: it is refused with 403 as before.
   */
  async function lookUpCounting(keyHash: string, req: Request): Promise<{ principal: Principal | null; rateLimitOutcome?: RateLimitOutcome }> {
    let expected = quotas.get(keyHash);
    if (!expected) {
      const principal = await deps.accounts.findPrincipalByKeyHash(keyHash);
      if (!principal) return { principal };
      expected = quotas.remember(keyHash, principal, quotaFor(principal, deps.mode));
      if (!allowedFrom(principal, req)) return { principal };
    } else if (!allowedFrom(expected.principal, req)) {
      return { principal: await deps.accounts.findPrincipalByKeyHash(keyHash) };
    }
    const found = await deps.accounts.findPrincipalCountingRequest(keyHash, deps.limits.windowsOf(`key:${expected.principal.keyId}`, expected.quota));
    if (!found) {
      quotas.forget(keyHash);
      return { principal: null };
    }
    const quota = quotaFor(found.principal, deps.mode);
    quotas.remember(keyHash, found.principal, quota);
    if (quota.perMinute !== expected.quota.perMinute || quota.burst !== expected.quota.burst) return { principal: found.principal };
    return { principal: found.principal, rateLimitOutcome: deps.limits.outcomeOf(quota, found.counted) };
  }

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
      const keyHash = hashApiKey(key);
      const { principal, rateLimitOutcome } = deps.limits.countsInDatabase
        ? await lookUpCounting(keyHash, req)
        : { principal: await deps.accounts.findPrincipalByKeyHash(keyHash), rateLimitOutcome: undefined };
      if (!principal) throw unauthorized('Unknown or revoked API key, or its lender account is deactivated.');
      if (!allowedFrom(principal, req)) throw new ApiError('forbidden', "This address is not on the lender account's IP allowlist.");
      req.principal = principal;
      req.rateLimitOutcome = rateLimitOutcome;
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

/**
 * What this process last saw of each key it served, by the key's hash: only to know which rate-limit
 * rows its next request counts in. Never trusted for access (the principal is read on every request).
 * Bounded: past MAX entries it starts again empty, which costs each key one extra lookup.
 */
class QuotaMemory {
  static readonly MAX = 10_000;
  private readonly byKeyHash = new Map<string, { principal: Principal; quota: Quota }>();

  get(keyHash: string) {
    return this.byKeyHash.get(keyHash);
  }

  remember(keyHash: string, principal: Principal, quota: Quota) {
    if (this.byKeyHash.size >= QuotaMemory.MAX && !this.byKeyHash.has(keyHash)) this.byKeyHash.clear();
    const entry = { principal, quota };
    this.byKeyHash.set(keyHash, entry);
    return entry;
  }

  forget(keyHash: string): void {
    this.byKeyHash.delete(keyHash);
  }
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

import type { Request, RequestHandler, Response } from 'express';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Principal } from '../principal.ts';
import type { ServiceMode } from '../config.ts';
import type { Database } from '../db/database.ts';
import { ApiError } from './error-catalogue.ts';
import type { CountedWindows, WindowCounts } from '../rate-limit-windows.ts';

export interface Quota {
  /** Requests per fixed 60-second window (what X-RateLimit-* describe). */
  perMinute: number;
  /** Requests within any one second. */
  burst: number;
}

/** Section 8 and D8. The sandbox is relaxed whatever the plan; an operator can raise a lender or a key. */
export const PLAN_QUOTAS: Record<'pilot' | 'production' | 'sandbox', Quota> = {
  pilot: { perMinute: 60, burst: 10 },
  production: { perMinute: 300, burst: 50 },
  sandbox: { perMinute: 1000, burst: 100 },
};

/** Requests without a valid key, per client address: enough for a misconfigured client, too few to guess keys. */
const ANONYMOUS_QUOTA: Quota = { perMinute: 120, burst: 30 };

export function quotaFor(principal: Principal, mode: ServiceMode): Quota {
  const plan = PLAN_QUOTAS[mode === 'sandbox' ? 'sandbox' : principal.lender.plan];
  const key = principal.keyRateLimit;
  if (key) return key;
  const { rateLimitPerMinute, rateLimitBurst } = principal.lender;
  return rateLimitPerMinute && rateLimitBurst ? { perMinute: rateLimitPerMinute, burst: rateLimitBurst } : plan;
}

export type Outcome = { allowed: boolean; minute: RateLimiterRes; retryAfterMs: number };

/**
 * Fixed-window counters from rate-limiter-flexible: in the database on PostgreSQL (shared by every
 * process), in memory on SQLite. One limiter per distinct quota, created on first use.
 */
export class RateLimits {
  private readonly limiters = new Map<string, RateLimiterAbstract>();

  constructor(private readonly store: Pick<Database, 'dialect' | 'knex'>) {}

  /** True on PostgreSQL: the windows live in the database, and a request may be counted by one statement with its key's lookup. */
  get countsInDatabase(): boolean {
    return this.store.dialect === 'postgres';
  }

  /** The rows a request of `subject` under `quota` counts in, for a statement that counts it elsewhere. */
  windowsOf(subject: string, quota: Quota, now = Date.now()): WindowCounts {
    return {
      burstKey: this.limiter(quota.burst, 1).getKey(subject),
      minuteKey: this.limiter(quota.perMinute, 60).getKey(subject),
      burstExpiresAt: now + 1000,
      minuteExpiresAt: now + 60_000,
      now,
      burst: quota.burst,
    };
  }

  /** The outcome `consume` would have given, from what such a statement counted. */
  outcomeOf(quota: Quota, counted: CountedWindows, now = Date.now()): Outcome {
    const minute = new RateLimiterRes(
      Math.max(quota.perMinute - counted.minutePoints, 0),
      counted.minuteExpiresAt === null ? 60_000 : Math.max(counted.minuteExpiresAt - now, 0),
      counted.minutePoints,
    );
    if (counted.burstPoints > quota.burst) return { allowed: false, minute, retryAfterMs: Math.max(counted.burstExpiresAt - now, 0) };
    if (counted.minutePoints > quota.perMinute) return { allowed: false, minute, retryAfterMs: minute.msBeforeNext };
    return { allowed: true, minute, retryAfterMs: 0 };
  }

  private limiter(points: number, durationSeconds: number): RateLimiterAbstract {
    const id = `${points}/${durationSeconds}`;
    let limiter = this.limiters.get(id);
    if (!limiter) {
      const options = { points, duration: durationSeconds, keyPrefix: `rl${id}` };
      limiter =
        this.store.dialect === 'postgres'
          ? new RateLimiterPostgres({ ...options, storeClient: this.store.knex, storeType: 'knex', tableName: 'rate_limits', tableCreated: true })
          : new RateLimiterMemory(options);
      this.limiters.set(id, limiter);
    }
    return limiter;
  }

  /** What the subject has used of its minute window so far, without counting anything. */
  async usage(subject: string, quota: Quota): Promise<{ used: number; resetsInMs: number }> {
    const state = await this.limiter(quota.perMinute, 60).get(subject);
    return state ? { used: state.consumedPoints, resetsInMs: Math.max(0, state.msBeforeNext) } : { used: 0, resetsInMs: 0 };
  }

  /** Counts one request against the burst limit, then the minute window. */
  async consume(subject: string, quota: Quota): Promise<Outcome> {
    const minute = this.limiter(quota.perMinute, 60);
    try {
      await this.limiter(quota.burst, 1).consume(subject);
    } catch (refusal) {
      if (!(refusal instanceof RateLimiterRes)) throw refusal;
      const state = (await minute.get(subject)) ?? new RateLimiterRes(quota.perMinute, 60_000, 0, true);
      return { allowed: false, minute: state, retryAfterMs: refusal.msBeforeNext };
    }
    try {
      const state = await minute.consume(subject);
      return { allowed: true, minute: state, retryAfterMs: 0 };
    } catch (refusal) {
      if (!(refusal instanceof RateLimiterRes)) throw refusal;
      return { allowed: false, minute: refusal, retryAfterMs: refusal.msBeforeNext };
    }
  }

  /**
   * Gives back one request `consume` allowed, for a caller that counts an attempt before doing the
   * work it limits and then finds the attempt should not count (rate-limiter-flexible's reward).
   * Counting first is what makes a limit hold under concurrency: each attempt takes its place by
   * one atomic increment, so no two attempts see the same remaining count. Only the minute window
   * is given back, and only while the window it was counted in has more than a second to run: a
   * reward landing in a new window would start that window below zero.
   */
  async refund(subject: string, quota: Quota, counted: { at: number; outcome: Outcome }): Promise<void> {
    if (Date.now() + 1000 >= counted.at + counted.outcome.minute.msBeforeNext) return;
    await this.limiter(quota.perMinute, 60).reward(subject, 1);
  }
}

function headersOf(quota: Quota, outcome: Outcome): Record<string, string> {
  return {
    'X-RateLimit-Limit': String(quota.perMinute),
    'X-RateLimit-Remaining': String(Math.max(0, outcome.minute.remainingPoints)),
    'X-RateLimit-Reset': String(Math.ceil((Date.now() + Math.max(0, outcome.minute.msBeforeNext)) / 1000)),
  };
}

function setHeaders(res: Response, quota: Quota, outcome: Outcome): void {
  for (const [name, value] of Object.entries(headersOf(quota, outcome))) res.setHeader(name, value);
}

function refusal(quota: Quota, outcome: Outcome): ApiError {
  const seconds = Math.max(1, Math.ceil(outcome.retryAfterMs / 1000));
  return new ApiError(
    'rate_limited',
    `Rate limit of ${quota.perMinute} requests per minute (burst ${quota.burst} per second) exceeded; retry in ${seconds} ${seconds === 1 ? 'second' : 'seconds'}.`,
    {
      retryAfterSeconds: seconds,
    },
  );
}

/** Per key, one quota for all endpoints; headers on every response, errors included (D8). */
export function rateLimitByKey(limits: RateLimits, mode: ServiceMode): RequestHandler {
  return async (req, res, next) => {
    try {
      const principal = req.principal!;
      const quota = quotaFor(principal, mode);
      // Counted already when the key's lookup did it in the same statement (PostgreSQL).
      const outcome = req.rateLimitOutcome ?? (await limits.consume(`key:${principal.keyId}`, quota));
      setHeaders(res, quota, outcome);
      next(outcome.allowed ? undefined : refusal(quota, outcome));
    } catch (error) {
      next(error);
    }
  };
}

/** Counts a request that failed authentication against its client address; refuses when over. */
export async function limitAnonymous(limits: RateLimits, req: Request, res: Response): Promise<void> {
  const outcome = await limits.consume(`ip:${req.ip ?? 'unknown'}`, ANONYMOUS_QUOTA);
  setHeaders(res, ANONYMOUS_QUOTA, outcome);
  if (!outcome.allowed) throw refusal(ANONYMOUS_QUOTA, outcome);
}

/**
 * For a request Node refuses before Express sees it (no key can be read): it counts against the
 * client address like any unauthenticated request, and its answer carries that quota's headers.
 */
export async function anonymousQuotaHeaders(limits: RateLimits, address: string | undefined): Promise<Record<string, string>> {
  return headersOf(ANONYMOUS_QUOTA, await limits.consume(`ip:${address ?? 'unknown'}`, ANONYMOUS_QUOTA));
}

import type { RequestHandler } from 'express';
import { PLAN_QUOTAS, quotaFor } from '../../platform/http/rate-limit.ts';
import { accountPage } from '../pages.ts';
import { one, viewerOf, type Dashboard } from './context.ts';

/** The account: its plan's limits, its API keys with this minute's use, its dashboard users, its return origins. */
export function account({ deps, html }: Dashboard): RequestHandler {
  return async (req, res) => {
    const viewer = viewerOf(res);
    const { lender } = viewer;
    const records = await deps.accounts.listKeys(lender.id);
    const keys = await Promise.all(
      records.map(async (key) => {
        const quota = quotaFor({ keyId: key.id, role: key.role, lender, keyRateLimit: key.rateLimit ?? null }, deps.mode);
        return { ...key, quota, usedThisMinute: key.revokedAt ? 0 : (await deps.rateLimits.usage(`key:${key.id}`, quota)).used };
      }),
    );
    const base = PLAN_QUOTAS[deps.mode === 'sandbox' ? 'sandbox' : lender.plan];
    const custom = Boolean(lender.rateLimitPerMinute && lender.rateLimitBurst);
    const plan = {
      name: deps.mode === 'sandbox' ? `${lender.plan} (sandbox limits)` : lender.plan,
      perMinute: custom ? lender.rateLimitPerMinute! : base.perMinute,
      burst: custom ? lender.rateLimitBurst! : base.burst,
      custom,
    };
    const notice = one(req.query.notice) === 'return-origins' ? 'Return origins saved.' : undefined;
    return html(res, 200, accountPage(viewer, { plan, keys, users: await deps.users.users.listUsers(lender.id), notice }));
  };
}

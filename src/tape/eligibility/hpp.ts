import { ADVANCE_MULTIPLE, BASELINE_DEFAULTS } from './common.ts';
import { shariaCovenants, shariaFindings } from './sharia.ts';
import type { Finding, ProductRules } from './types.ts';

// A home purchase plan runs for years, so it is sized on what is left after declared obligations
// and needs those obligations declared (D21).
export const hpp: ProductRules<'advance_multiple_of_monthly_avg'> = {
  productType: 'hpp',
  summary: 'Home purchase plan: co-ownership bought out over years; sized on net disposable income, needs affordability and Sharia screening.',
  keys: { advance_multiple_of_monthly_avg: ADVANCE_MULTIPLE },
  defaults: {
    ...BASELINE_DEFAULTS,
    min_months_history: 12,
    min_monthly_avg_eur: 1500,
    max_volatility_cv: 0.8,
    subprime_min_score: 0.4,
    standard_min_score: 0.6,
    prime_min_score: 0.8,
    standard_min_months: 18,
    prime_min_months: 24,
    standard_min_trend_pct: -2,
    prime_min_trend_pct: 0,
    max_advance_eur: 1_000_000,
    max_revenue_share_pct: 35,
    payback_cap_multiple: 2,
    advance_multiple_of_monthly_avg: 36,
  },
  findings: ({ islamic, affordability: a }) => {
    const out: Finding[] = shariaFindings(islamic);
    if (!a)
      out.push({
        code: 'AFFORDABILITY_REQUIRED',
        limit: 'subprime',
        message: 'No declared monthly obligations: affordability cannot be assessed.',
      });
    else if (a.affordability_tier === 'unaffordable' || a.affordability_tier === 'stretched')
      out.push({
        code: 'AFFORDABILITY_REQUIRED',
        limit: a.affordability_tier === 'unaffordable' ? 'ineligible' : 'subprime',
        message: `Affordability is ${a.affordability_tier} (debt-to-income ${a.dti_ratio ?? 'undefined'}).`,
      });
    return out;
  },
  advanceBase: ({ policy: p, metrics: m, affordability: a }) => p.advance_multiple_of_monthly_avg * (a ? Math.max(0, a.net_disposable_income) : m.monthlyAvg),
  covenants: ({ policy: p, islamic }) => [
    {
      code: 'HOME_PAYMENT_CEILING',
      description: `Monthly rent and acquisition payment at most ${p.max_revenue_share_pct}% of monthly revenue.`,
    },
    ...shariaCovenants(islamic),
  ],
};

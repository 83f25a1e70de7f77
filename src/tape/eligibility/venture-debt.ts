import { ADVANCE_MULTIPLE, BASELINE_DEFAULTS, eur } from './common.ts';
import type { ProductRules } from './types.ts';

// Venture debt finances growth and is sized on the current run-rate, so it is refused without growth.
export const ventureDebt: ProductRules<'advance_multiple_of_monthly_avg' | 'min_growth_pct_per_month'> = {
  productType: 'venture_debt',
  summary: 'Venture debt: growth financing sized on the 3-month run-rate; requires a non-declining trend.',
  keys: {
    advance_multiple_of_monthly_avg: ADVANCE_MULTIPLE,
    min_growth_pct_per_month: { min: -100, max: 100, description: 'Lowest trend slope, percent of the average per month, for any tier.' },
  },
  defaults: {
    ...BASELINE_DEFAULTS,
    min_months_history: 12,
    min_monthly_avg_eur: 5000,
    max_volatility_cv: 1,
    subprime_min_score: 0.35,
    standard_min_score: 0.55,
    standard_min_months: 12,
    prime_min_months: 18,
    standard_min_trend_pct: 0,
    prime_min_trend_pct: 1,
    max_advance_eur: 1_000_000,
    max_revenue_share_pct: 10,
    payback_cap_multiple: 1.5,
    advance_multiple_of_monthly_avg: 3,
    min_growth_pct_per_month: 0,
  },
  findings: ({ policy: p, metrics: m }) =>
    m.slopePct === null || m.slopePct < p.min_growth_pct_per_month
      ? [
          {
            code: 'GROWTH_BELOW_MINIMUM',
            limit: 'ineligible',
            message: `Revenue trend ${m.slopePct ?? 'unknown'}% per month is below ${p.min_growth_pct_per_month}%, the venture debt minimum.`,
          },
        ]
      : [],
  advanceBase: ({ policy: p, metrics: m }) => p.advance_multiple_of_monthly_avg * m.recent3mAvg,
  covenants: ({ metrics: m }) => [
    {
      code: 'MINIMUM_REVENUE',
      description: `Keep the 3-month average revenue at or above ${eur(m.recent3mAvg / 2)}, half the current run-rate.`,
    },
  ],
};

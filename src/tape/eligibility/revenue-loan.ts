import { ADVANCE_MULTIPLE, BASELINE_DEFAULTS } from './common.ts';
import type { ProductRules } from './types.ts';

// Repaid from platform payouts within a fixed term: the advance must be recoverable at the revenue
// share before the term ends, and every requested platform must report, as repayment comes from them.
export const revenueLoan: ProductRules<'advance_multiple_of_monthly_avg' | 'max_term_months'> = {
  productType: 'revenue_loan',
  summary: 'Revenue loan: repaid as a share of monthly revenue, but within a fixed maximum term.',
  keys: {
    advance_multiple_of_monthly_avg: ADVANCE_MULTIPLE,
    max_term_months: { min: 1, max: 120, integer: true, description: 'Months within which the loan must be repaid.' },
  },
  defaults: {
    ...BASELINE_DEFAULTS,
    min_monthly_avg_eur: 250,
    max_volatility_cv: 1.2,
    max_advance_eur: 200_000,
    max_revenue_share_pct: 20,
    payback_cap_multiple: 1.2,
    advance_multiple_of_monthly_avg: 4,
    max_term_months: 18,
  },
  findings: ({ metrics: m }) => {
    const missing = m.platforms.filter((u) => u.monthsReported === 0).map((u) => u.platform);
    return missing.length > 0
      ? [
          {
            code: 'REPAYMENT_SOURCE_MISSING',
            limit: 'subprime',
            message: `Repayment is collected from payouts, and ${missing.join(' and ')} reported no data.`,
          },
        ]
      : [];
  },
  advanceBase: ({ policy: p, metrics: m }) =>
    Math.min(p.advance_multiple_of_monthly_avg * m.monthlyAvg, ((m.monthlyAvg * p.max_revenue_share_pct) / 100) * (p.max_term_months / p.payback_cap_multiple)),
  covenants: ({ policy: p }) => [
    {
      code: 'REPAYMENT_TERM',
      description: `Repaid from at most ${p.max_revenue_share_pct}% of monthly revenue within ${p.max_term_months} months; total repayment at most ${p.payback_cap_multiple}x the loan.`,
    },
  ],
};

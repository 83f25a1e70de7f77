import { BASELINE_DEFAULTS } from './common.ts';
import type { EligibilityContext, ProductRules } from './types.ts';

// Fixed instalments do not shrink when revenue does, so the basis is the lower of the 12-month and
// the 3-month average, and a recent fall limits the tier.
const basis = ({ metrics: m }: EligibilityContext) => Math.min(m.monthlyAvg, m.recent3mAvg);

export const termLoan: ProductRules<'term_months'> = {
  productType: 'term_loan',
  summary: 'Term loan: fixed monthly instalments over a fixed term, sized so an instalment fits in the revenue share.',
  keys: { term_months: { min: 1, max: 120, integer: true, description: 'Number of monthly instalments.' } },
  defaults: {
    ...BASELINE_DEFAULTS,
    min_months_history: 6,
    min_monthly_avg_eur: 500,
    max_volatility_cv: 0.8,
    subprime_min_score: 0.35,
    standard_min_score: 0.55,
    prime_min_score: 0.8,
    standard_min_months: 12,
    prime_min_months: 24,
    standard_min_trend_pct: -2,
    prime_min_trend_pct: 0,
    max_advance_eur: 150_000,
    max_revenue_share_pct: 30,
    payback_cap_multiple: 1.25,
    term_months: 24,
  },
  findings: ({ metrics: m }) =>
    m.trend3m === 'declining'
      ? [{ code: 'RECENT_DECLINE', limit: 'subprime', message: 'The last 3 months fell against the 3 before (trend_3m declining).' }]
      : [],
  advanceBase: (ctx) => {
    const p = ctx.policy;
    return ((basis(ctx) * p.max_revenue_share_pct) / 100) * (p.term_months / p.payback_cap_multiple);
  },
  covenants: ({ policy: p }) => [
    {
      code: 'FIXED_INSTALMENT',
      description: `${p.term_months} monthly instalments, each at most ${p.max_revenue_share_pct}% of monthly revenue; total repayment at most ${p.payback_cap_multiple}x the principal.`,
    },
  ],
};

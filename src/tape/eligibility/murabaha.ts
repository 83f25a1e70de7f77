import { ADVANCE_MULTIPLE, BASELINE_DEFAULTS } from './common.ts';
import { shariaCovenants, shariaFindings } from './sharia.ts';
import type { ProductRules } from './types.ts';

// Cost-plus sale: the payback cap is the agreed mark-up, fixed at purchase.
export const murabaha: ProductRules<'advance_multiple_of_monthly_avg'> = {
  productType: 'murabaha',
  summary: 'Murabaha: the financier buys an asset and sells it on at a fixed mark-up, paid in instalments; needs Sharia screening.',
  keys: { advance_multiple_of_monthly_avg: ADVANCE_MULTIPLE },
  defaults: {
    ...BASELINE_DEFAULTS,
    min_months_history: 6,
    min_monthly_avg_eur: 250,
    max_volatility_cv: 1,
    max_advance_eur: 200_000,
    max_revenue_share_pct: 25,
    payback_cap_multiple: 1.2,
    advance_multiple_of_monthly_avg: 6,
  },
  findings: ({ islamic }) => shariaFindings(islamic),
  advanceBase: ({ policy: p, metrics: m }) => p.advance_multiple_of_monthly_avg * m.monthlyAvg,
  covenants: ({ policy: p, islamic }) => [
    {
      code: 'COST_PLUS_PRICE',
      description: `Sale price fixed at purchase, at most ${p.payback_cap_multiple}x the asset cost; no compounding on late payment.`,
    },
    ...shariaCovenants(islamic),
  ],
};

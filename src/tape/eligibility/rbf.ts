import { ADVANCE_MULTIPLE, BASELINE_DEFAULTS } from './common.ts';
import type { ProductRules } from './types.ts';

export const rbf: ProductRules<'advance_multiple_of_monthly_avg'> = {
  productType: 'rbf',
  summary: 'Revenue-based financing: an advance repaid as a share of monthly revenue until the payback cap is reached.',
  keys: { advance_multiple_of_monthly_avg: ADVANCE_MULTIPLE },
  defaults: { ...BASELINE_DEFAULTS, advance_multiple_of_monthly_avg: 6 },
  findings: () => [],
  advanceBase: ({ policy: p, metrics: m }) => p.advance_multiple_of_monthly_avg * m.monthlyAvg,
  covenants: ({ policy: p }) => [
    {
      code: 'REVENUE_SHARE_CEILING',
      description: `Remit at most ${p.max_revenue_share_pct}% of each month's revenue until ${p.payback_cap_multiple}x the advance is repaid.`,
    },
  ],
};

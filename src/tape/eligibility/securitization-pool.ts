import { ADVANCE_MULTIPLE, BASELINE_DEFAULTS } from './common.ts';
import type { ProductRules } from './types.ts';

// A pooled loan is sold on to investors who see only the tape, so the data itself must be complete.
export const securitizationPool: ProductRules<'advance_multiple_of_monthly_avg' | 'min_data_quality_score'> = {
  productType: 'securitization_pool',
  summary: 'Loan placed in a securitisation pool: a full year of history and near-complete data are required.',
  keys: {
    advance_multiple_of_monthly_avg: ADVANCE_MULTIPLE,
    min_data_quality_score: { min: 0, max: 100, integer: true, description: 'Lowest data-quality score a pooled loan may have.' },
  },
  defaults: {
    ...BASELINE_DEFAULTS,
    min_months_history: 12,
    min_monthly_avg_eur: 1000,
    max_volatility_cv: 0.6,
    subprime_min_score: 0.4,
    standard_min_score: 0.6,
    prime_min_score: 0.8,
    standard_min_months: 12,
    prime_min_months: 24,
    standard_min_trend_pct: -2,
    prime_min_trend_pct: -1,
    standard_advance_factor: 0.8,
    max_advance_eur: 500_000,
    payback_cap_multiple: 1.2,
    advance_multiple_of_monthly_avg: 6,
    min_data_quality_score: 80,
  },
  findings: ({ policy: p, dataQualityScore }) =>
    dataQualityScore < p.min_data_quality_score
      ? [
          {
            code: 'POOL_DATA_QUALITY',
            limit: 'ineligible',
            message: `Data-quality score ${dataQualityScore} is below ${p.min_data_quality_score}, the pool minimum.`,
          },
        ]
      : [],
  advanceBase: ({ policy: p, metrics: m }) => p.advance_multiple_of_monthly_avg * m.monthlyAvg,
  covenants: () => [{ code: 'POOL_TAPE_REFRESH', description: 'Refresh this tape before each pool cut-off date; a loan whose tier falls leaves the pool.' }],
};

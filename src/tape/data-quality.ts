// Data quality: which tape fields have data. Tier A fields are the ones a credit decision rests on;
// each can be emptied by the ND codes that point at it, and the score is the weight of those left complete.
import type { DataQuality } from '../../generated/tape.ts';
import { type Platform, type SchemaVersion, versionAtLeast } from './income.ts';
import { type IncomeMetrics, METRIC_RULES } from './metrics.ts';

/** Tier A fields exist since 1.0.0, so the score and count read the same at every schema version. */
export const TIER_A_FIELDS = {
  platform_connections: { weight: 20, description: 'Every requested platform is connected and reported revenue.' },
  'cashflow_summary.per_platform': { weight: 10, description: 'Some platform reported, and every figure was converted to euro.' },
  'cashflow_summary.monthly_revenue_avg_eur': { weight: 15, description: 'At least one month of revenue.' },
  'cashflow_summary.revenue_3m_total_eur': { weight: 10, description: 'At least 3 months of history.' },
  'cashflow_summary.revenue_12m_total_eur': { weight: 15, description: 'At least 12 months of history.' },
  'risk_profile.revenue_volatility_cv': { weight: 10, description: 'The coefficient of variation is defined.' },
  'risk_profile.max_drawdown_pct': { weight: 5, description: 'The maximum drawdown is defined.' },
  'risk_profile.platform_hhi': { weight: 5, description: 'The concentration index is defined.' },
  'risk_profile.trend_slope_eur_per_month': { weight: 5, description: 'The trend slope is defined.' },
  'metrics.trend_3m': { weight: 5, description: 'trend_3m is not insufficient_data.' },
} as const;
export type TierAField = keyof typeof TIER_A_FIELDS;

interface NdSpec {
  /** Tape field left without data; `{platform}` is replaced by the platform concerned. */
  field: string;
  /** Tier A fields this code leaves incomplete; none for optional blocks, which do not count. */
  tierA: readonly TierAField[];
  /** First schema version with the field; a rendering at an earlier version leaves the code out. */
  since: SchemaVersion;
  message: string;
}

export const ND_CATALOGUE = {
  ND_PLATFORM_NOT_CONNECTED: {
    field: 'platform_connections[{platform}]',
    tierA: ['platform_connections'],
    since: '1.0.0',
    message: 'The creator did not connect this requested platform; no data from it.',
  },
  ND_PLATFORM_REVOKED: {
    field: 'platform_connections[{platform}]',
    tierA: ['platform_connections'],
    since: '1.0.0',
    message: 'The creator revoked read-only access; no data from this platform is used.',
  },
  ND_PLATFORM_ERROR: {
    field: 'platform_connections[{platform}]',
    tierA: ['platform_connections'],
    since: '1.0.0',
    message: 'The platform returned an error; no data from it is used.',
  },
  ND_PLATFORM_NO_DATA: {
    field: 'platform_connections[{platform}]',
    tierA: ['platform_connections'],
    since: '1.0.0',
    message: 'The platform is connected but gave no usable figure for a complete month.',
  },
  ND_CURRENCY_UNCONVERTIBLE: {
    field: 'cashflow_summary.per_platform[{platform}]',
    tierA: ['cashflow_summary.per_platform'],
    since: '1.0.0',
    message: 'Some figures are in a currency the reference-rate table cannot convert to euro; they are left out (D17).',
  },
  ND_NO_REVENUE_DATA: {
    field: 'cashflow_summary.monthly_revenue_avg_eur',
    tierA: ['cashflow_summary.monthly_revenue_avg_eur', 'cashflow_summary.per_platform'],
    since: '1.0.0',
    message: 'No complete month of revenue from a connected platform; revenue figures are 0.',
  },
  ND_HISTORY_UNDER_3_MONTHS: {
    field: 'cashflow_summary.revenue_3m_total_eur',
    tierA: ['cashflow_summary.revenue_3m_total_eur'],
    since: '1.0.0',
    message: 'Fewer than 3 months of history; the total covers the months there are.',
  },
  ND_HISTORY_UNDER_12_MONTHS: {
    field: 'cashflow_summary.revenue_12m_total_eur',
    tierA: ['cashflow_summary.revenue_12m_total_eur'],
    since: '1.0.0',
    message: 'Fewer than 12 months of history; the total covers the months there are.',
  },
  ND_CV_INSUFFICIENT_HISTORY: {
    field: 'risk_profile.revenue_volatility_cv',
    tierA: ['risk_profile.revenue_volatility_cv'],
    since: '1.0.0',
    message: 'Fewer than 2 months of history; volatility is not measured.',
  },
  ND_CV_NONPOSITIVE_MEAN: {
    field: 'risk_profile.revenue_volatility_cv',
    tierA: ['risk_profile.revenue_volatility_cv'],
    since: '1.0.0',
    message: 'Average monthly revenue is zero or negative; the coefficient of variation is undefined.',
  },
  ND_DRAWDOWN_INSUFFICIENT_HISTORY: {
    field: 'risk_profile.max_drawdown_pct',
    tierA: ['risk_profile.max_drawdown_pct'],
    since: '1.0.0',
    message: 'Fewer than 2 months of history; drawdown is not measured.',
  },
  ND_DRAWDOWN_NO_POSITIVE_PEAK: {
    field: 'risk_profile.max_drawdown_pct',
    tierA: ['risk_profile.max_drawdown_pct'],
    since: '1.0.0',
    message: 'No month with positive revenue in the window; drawdown is undefined.',
  },
  ND_HHI_NO_POSITIVE_REVENUE: {
    field: 'risk_profile.platform_hhi',
    tierA: ['risk_profile.platform_hhi'],
    since: '1.0.0',
    message: 'No platform has a positive 12-month total; revenue shares and HHI are undefined.',
  },
  ND_TREND_INSUFFICIENT_HISTORY: {
    field: 'risk_profile.trend_slope_eur_per_month',
    tierA: ['risk_profile.trend_slope_eur_per_month'],
    since: '1.0.0',
    message: 'Fewer than 3 months of history; the trend slope is not measured.',
  },
  ND_TREND_3M_INSUFFICIENT_HISTORY: {
    field: 'metrics.trend_3m',
    tierA: ['metrics.trend_3m'],
    since: '1.0.0',
    message: 'Fewer than 6 months of history; trend_3m is insufficient_data.',
  },
  ND_INCOME_TREND_UNDEFINED: {
    field: 'eligibility.income_trend',
    tierA: [],
    since: '2.0.0',
    message: 'Fewer than 6 months in the window or no positive average; income_trend is insufficient_data.',
  },
  ND_AFFORDABILITY_NOT_DECLARED: {
    field: 'affordability',
    tierA: [],
    since: '1.1.0',
    message: 'The request declared no monthly obligations, so there is no affordability block (D21).',
  },
  ND_DTI_NONPOSITIVE_REVENUE: {
    field: 'affordability.dti_ratio',
    tierA: [],
    since: '1.1.0',
    message: 'Average monthly revenue is zero or negative; the debt-to-income ratio is undefined.',
  },
  ND_SHARIA_SCREENING_PENDING: {
    field: 'islamic_compliance.sharia_eligible',
    tierA: [],
    since: '1.1.0',
    message: 'No Sharia screening overlay with a verdict is attached yet (D20).',
  },
} as const satisfies Record<string, NdSpec>;
export type NdCode = keyof typeof ND_CATALOGUE;

export type NdEntry = DataQuality['nd_code_summary'][number];

export function ndEntry(code: NdCode, platform?: Platform): NdEntry {
  const spec = ND_CATALOGUE[code];
  return { code, field: platform ? spec.field.replace('{platform}', platform) : spec.field, message: spec.message };
}

const CONNECTION_ND = {
  not_connected: 'ND_PLATFORM_NOT_CONNECTED',
  revoked: 'ND_PLATFORM_REVOKED',
  error: 'ND_PLATFORM_ERROR',
  connected: 'ND_PLATFORM_NO_DATA',
} as const;

/** ND codes of one platform connection, as listed in its `platform_connections[].nd_codes`. */
export function platformNdCodes(use: IncomeMetrics['platforms'][number]): NdCode[] {
  const codes: NdCode[] = [];
  if (use.monthsReported === 0) codes.push(CONNECTION_ND[use.status]);
  if (use.unconvertible > 0) codes.push('ND_CURRENCY_UNCONVERTIBLE');
  return codes;
}

/** ND entries of the platforms and metrics, in tape order. */
export function metricNdEntries(m: IncomeMetrics): NdEntry[] {
  const out: NdEntry[] = [];
  for (const use of m.platforms) for (const code of platformNdCodes(use)) out.push(ndEntry(code, use.platform));
  const n = m.monthsObserved;
  if (n === 0) out.push(ndEntry('ND_NO_REVENUE_DATA'));
  if (n < 3) out.push(ndEntry('ND_HISTORY_UNDER_3_MONTHS'));
  if (n < METRIC_RULES.windowMonths) out.push(ndEntry('ND_HISTORY_UNDER_12_MONTHS'));
  if (m.cv === null) out.push(ndEntry(m.windowMonths < METRIC_RULES.cvMinMonths ? 'ND_CV_INSUFFICIENT_HISTORY' : 'ND_CV_NONPOSITIVE_MEAN'));
  if (m.maxDrawdownPct === null)
    out.push(ndEntry(m.windowMonths < METRIC_RULES.drawdownMinMonths ? 'ND_DRAWDOWN_INSUFFICIENT_HISTORY' : 'ND_DRAWDOWN_NO_POSITIVE_PEAK'));
  if (m.hhi === null) out.push(ndEntry('ND_HHI_NO_POSITIVE_REVENUE'));
  if (m.slope === null) out.push(ndEntry('ND_TREND_INSUFFICIENT_HISTORY'));
  if (m.trend3m === 'insufficient_data') out.push(ndEntry('ND_TREND_3M_INSUFFICIENT_HISTORY'));
  if (m.incomeTrend === 'insufficient_data') out.push(ndEntry('ND_INCOME_TREND_UNDEFINED'));
  return out;
}

export function buildDataQuality(entries: NdEntry[]): DataQuality {
  const missing = new Set<string>(entries.flatMap((e) => ND_CATALOGUE[e.code as NdCode].tierA));
  let score = 0;
  let complete = 0;
  let total = 0;
  for (const [field, { weight }] of Object.entries(TIER_A_FIELDS)) {
    total++;
    if (missing.has(field)) continue;
    complete++;
    score += weight;
  }
  return {
    score,
    tier_a_fields_complete: complete,
    tier_a_fields_total: total,
    nd_codes: [...new Set(entries.map((e) => e.code))],
    nd_code_summary: entries,
  };
}

/** A rendering at `version` keeps only the ND codes of fields that exist there. */
export const ndCodeExistsAt = (code: string, version: SchemaVersion): boolean => versionAtLeast(version, ND_CATALOGUE[code as NdCode].since);

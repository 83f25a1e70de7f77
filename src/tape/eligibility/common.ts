// Rules every product type applies, with thresholds from its policy; product files add their own.
import type { Covenant } from '../../../generated/tape.ts';
import { monthString } from '../income.ts';
import { METRIC_RULES } from '../metrics.ts';
import type { EligibilityContext, Finding, KeySpec } from './types.ts';

export const COMMON_KEYS = {
  min_months_history: { min: 1, max: 60, integer: true, description: 'Fewest months of history for any tier; fewer is ineligible.' },
  min_monthly_avg_eur: { min: 0, max: 10_000_000, description: 'Lowest monthly average revenue in euro; less is ineligible.' },
  max_volatility_cv: { min: 0, max: 5, description: 'Highest coefficient of variation; more is ineligible.' },
  subprime_min_score: { min: 0, max: 1, description: 'Lowest income stability score for subprime; less is ineligible.' },
  standard_min_score: { min: 0, max: 1, description: 'Lowest income stability score for standard.' },
  prime_min_score: { min: 0, max: 1, description: 'Lowest income stability score for prime.' },
  standard_min_months: { min: 1, max: 60, integer: true, description: 'Fewest months of history for standard.' },
  prime_min_months: { min: 1, max: 60, integer: true, description: 'Fewest months of history for prime.' },
  prime_max_hhi: { min: 0.5, max: 1, description: 'Highest platform HHI for prime (0.5 is an even split of two platforms).' },
  standard_min_trend_pct: { min: -100, max: 100, description: 'Lowest trend slope, percent of the average per month, for standard.' },
  prime_min_trend_pct: { min: -100, max: 100, description: 'Lowest trend slope, percent of the average per month, for prime.' },
  subprime_advance_factor: { min: 0, max: 1, description: 'Share of the advance base a subprime tape may advance.' },
  standard_advance_factor: { min: 0, max: 1, description: 'Share of the advance base a standard tape may advance.' },
  prime_advance_factor: { min: 0, max: 1, description: 'Share of the advance base a prime tape may advance.' },
  max_advance_eur: { min: 0, max: 100_000_000, description: 'Ceiling of the maximum advance in euro.' },
  max_revenue_share_pct: { min: 0, max: 100, description: 'Highest share of monthly revenue that may go to repayment.' },
  payback_cap_multiple: { min: 1, max: 3, description: 'Total repayment at most this multiple of the advance.' },
} as const satisfies Record<string, KeySpec>;

/**
 * Pairs that must stay ordered, [lower, higher, strictly]: tier cut-offs prime > standard > subprime,
 * and nothing that lets a worse tier get more than a better one.
 */
export const ORDERINGS: readonly (readonly [keyof typeof COMMON_KEYS, keyof typeof COMMON_KEYS, boolean])[] = [
  ['subprime_min_score', 'standard_min_score', true],
  ['standard_min_score', 'prime_min_score', true],
  ['min_months_history', 'standard_min_months', false],
  ['standard_min_months', 'prime_min_months', false],
  ['standard_min_trend_pct', 'prime_min_trend_pct', false],
  ['subprime_advance_factor', 'standard_advance_factor', false],
  ['standard_advance_factor', 'prime_advance_factor', false],
];

export const eur = (x: number): string => `EUR ${x.toFixed(2)}`;
const months = (n: number): string => `${n} month${n === 1 ? '' : 's'}`;

export function commonFindings({ metrics: m, policy: p, affordability }: EligibilityContext): Finding[] {
  const out: Finding[] = [];
  for (const use of m.platforms) {
    if (use.monthsReported === 0)
      out.push({
        code: 'MISSING_PLATFORM_DATA',
        limit: null,
        severity: 'warning',
        message:
          use.status === 'connected'
            ? `${use.platform} is connected but gave no usable figure for a complete month; the figures leave it out.`
            : `No data from requested platform ${use.platform} (connection ${use.status}); the figures leave it out.`,
      });
    if (use.unconvertible > 0)
      out.push({
        code: 'CURRENCY_UNCONVERTIBLE',
        limit: null,
        severity: 'warning',
        message: `${use.unconvertible} figure(s) from ${use.platform} have no euro reference rate and are left out.`,
      });
  }
  const n = m.monthsObserved;
  if (n === 0) {
    out.push({ code: 'NO_REVENUE_DATA', limit: 'ineligible', message: 'No complete month of revenue from a connected platform.' });
    return out;
  }
  if (m.negativeMonths > 0)
    out.push({
      code: 'NEGATIVE_REVENUE_MONTH',
      limit: null,
      severity: 'warning',
      message: `${months(m.negativeMonths)} of the last ${m.windowMonths} had negative revenue (refunds above sales).`,
    });
  if (m.lagMonths >= METRIC_RULES.staleAfterMonths)
    out.push({
      code: 'DATA_STALE',
      limit: null,
      severity: 'warning',
      message: `The latest reported month is ${monthString(m.asOfMonth)}, ${months(m.lagMonths)} before the last complete month; later months are not covered.`,
    });

  if (n < p.min_months_history)
    out.push({
      code: 'INSUFFICIENT_HISTORY',
      limit: 'ineligible',
      message: `${months(n)} of history; at least ${p.min_months_history} needed.`,
    });
  else if (n < p.standard_min_months)
    out.push({ code: 'SHORT_HISTORY', limit: 'subprime', message: `${months(n)} of history; standard needs ${p.standard_min_months}.` });
  else if (n < p.prime_min_months)
    out.push({ code: 'SHORT_HISTORY', limit: 'standard', message: `${months(n)} of history; prime needs ${p.prime_min_months}.` });

  if (m.monthlyAvg <= 0 || m.monthlyAvg < p.min_monthly_avg_eur)
    out.push({
      code: 'LOW_REVENUE',
      limit: 'ineligible',
      message:
        m.monthlyAvg <= 0
          ? `Average monthly revenue ${eur(m.monthlyAvg)} is not positive.`
          : `Average monthly revenue ${eur(m.monthlyAvg)} is below the minimum ${eur(p.min_monthly_avg_eur)}.`,
    });
  if (m.cv !== null && m.cv > p.max_volatility_cv)
    out.push({
      code: 'HIGH_VOLATILITY',
      limit: 'ineligible',
      message: `Coefficient of variation ${m.cv} is above the maximum ${p.max_volatility_cv}.`,
    });

  const s = m.stabilityScore;
  const scoreCut =
    s < p.subprime_min_score
      ? (['ineligible', 'subprime', p.subprime_min_score] as const)
      : s < p.standard_min_score
        ? (['subprime', 'standard', p.standard_min_score] as const)
        : s < p.prime_min_score
          ? (['standard', 'prime', p.prime_min_score] as const)
          : undefined;
  if (scoreCut)
    out.push({
      code: 'LOW_STABILITY_SCORE',
      limit: scoreCut[0],
      message: `Income stability score ${s} is below ${scoreCut[2]}, the ${scoreCut[1]} cut-off.`,
    });

  if (m.hhi !== null && m.hhi > p.prime_max_hhi)
    out.push({
      code: 'PLATFORM_CONCENTRATION',
      limit: 'standard',
      message: `Platform HHI ${m.hhi} is above ${p.prime_max_hhi}, the most prime allows.`,
    });

  if (m.slopePct === null) {
    if (m.monthlyAvg > 0 && n >= p.min_months_history)
      out.push({ code: 'TREND_UNKNOWN', limit: 'subprime', message: 'Fewer than 3 months: the revenue trend cannot be measured.' });
  } else if (m.slopePct < p.standard_min_trend_pct)
    out.push({
      code: 'DECLINING_REVENUE',
      limit: 'subprime',
      message: `Revenue trend ${m.slopePct}% of the average per month is below ${p.standard_min_trend_pct}%, the standard minimum.`,
    });
  else if (m.slopePct < p.prime_min_trend_pct)
    out.push({
      code: 'DECLINING_REVENUE',
      limit: 'standard',
      message: `Revenue trend ${m.slopePct}% of the average per month is below ${p.prime_min_trend_pct}%, the prime minimum.`,
    });

  if (affordability?.affordability_tier === 'unaffordable')
    out.push({
      code: 'HIGH_DEBT_BURDEN',
      limit: 'subprime',
      message: `Declared obligations of ${eur(affordability.declared_monthly_obligations)} a month are unaffordable from this income.`,
    });
  return out;
}

export function commonCovenants({ metrics: m }: EligibilityContext, tier: string): Covenant[] {
  const connected = m.platforms.filter((u) => u.monthsReported > 0).map((u) => u.platform);
  const out: Covenant[] = [
    {
      code: 'CONNECTIONS_MAINTAINED',
      description: `Keep the read-only ${connected.join(' and ')} connection${connected.length > 1 ? 's' : ''} active until repaid, so income can be re-verified.`,
    },
  ];
  if (tier === 'subprime')
    out.push({
      code: 'MONTHLY_REVERIFICATION',
      description: 'Re-verify income every month; a lower tier at re-verification stops further drawdowns.',
    });
  return out;
}

/** Used by every product whose advance base is a number of months of revenue. */
export const ADVANCE_MULTIPLE: KeySpec = { min: 0, max: 36, description: 'Advance base in months of the revenue basis.' };

/** rbf's policy; the other products start from it and change what their risk calls for. */
export const BASELINE_DEFAULTS = {
  min_months_history: 3,
  min_monthly_avg_eur: 25,
  max_volatility_cv: 1.5,
  subprime_min_score: 0.3,
  standard_min_score: 0.5,
  prime_min_score: 0.75,
  standard_min_months: 6,
  prime_min_months: 12,
  prime_max_hhi: 0.8,
  standard_min_trend_pct: -3,
  prime_min_trend_pct: -1,
  subprime_advance_factor: 0.5,
  standard_advance_factor: 0.75,
  prime_advance_factor: 1,
  max_advance_eur: 250_000,
  max_revenue_share_pct: 15,
  payback_cap_multiple: 1.3,
} as const satisfies Record<keyof typeof COMMON_KEYS, number>;

// Income data in, Risk Tape out: the full internal tape, which is the 2.0.0 rendering.
import type { RiskTape200 } from '../../generated/tape.ts';
import { affordabilityBlock, islamicCompliance, SHARIA_PRODUCTS } from './blocks.ts';
import { buildDataQuality, metricNdEntries, ndEntry, platformNdCodes } from './data-quality.ts';
import { decideEligibility } from './eligibility/index.ts';
import { resolvePolicy } from './eligibility/policy.ts';
import { lastDayOfMonth, type TapeInput } from './income.ts';
import { computeMetrics } from './metrics.ts';

export type RiskTape = RiskTape200;

export interface ComputeOptions {
  /**
   * When the income was read, printed as `tape_generated_at`: the months before its month are the
   * complete ones. A re-score of the same income (an overlay attached) passes the tape's own
   * `tape_generated_at`, so every as-of field of the tape stays as it was (P34); nothing here reads a clock.
   */
  now: Date;
}

/**
 * Pure and deterministic for a given input and `now`. Bad data (no months, zero or negative revenue,
 * a platform missing, an unconvertible currency) gives a valid tape with ND codes and flags. Throws
 * PolicyOverrideError for overrides that make no sense, and TypeError/RangeError only for input the
 * types rule out (a month not `YYYY-MM`, negative declared obligations).
 */
export function computeTape(input: TapeInput, { now }: ComputeOptions): RiskTape {
  const policy = resolvePolicy(input.productType, input.policyOverrides);
  const m = computeMetrics(input.platforms, now);
  const obligations = input.declaredMonthlyObligationsEur;
  const affordability = obligations == null ? undefined : affordabilityBlock(obligations, m.monthlyAvg, m.cv);
  const overlays = input.overlays ?? [];
  const islamic = SHARIA_PRODUCTS.has(input.productType) ? islamicCompliance(overlays) : undefined;

  const nd = metricNdEntries(m);
  if (!affordability) nd.push(ndEntry('ND_AFFORDABILITY_NOT_DECLARED'));
  else if (affordability.dti_ratio === null) nd.push(ndEntry('ND_DTI_NONPOSITIVE_REVENUE'));
  if (islamic?.status === 'pending') nd.push(ndEntry('ND_SHARIA_SCREENING_PENDING'));
  const dataQuality = buildDataQuality(nd);

  const eligibility = decideEligibility({
    productType: input.productType,
    policy,
    metrics: m,
    dataQualityScore: dataQuality.score,
    affordability,
    islamic,
    overlays,
  });
  const used = m.perPlatform.map((b) => b.platform);
  return {
    schema_version: '2.0.0',
    verification_id: input.verificationId,
    obligor_reference: input.obligorReference,
    tape_generated_at: now.toISOString(),
    as_of_date: lastDayOfMonth(m.asOfMonth),
    status: 'completed',
    platforms: used,
    obligor: {
      reference: input.obligorReference,
      connected_platforms: m.platforms.filter((u) => u.status === 'connected').map((u) => u.platform),
    },
    platform_connections: m.platforms.map((u) => ({
      platform: u.platform,
      status: u.status,
      connected_at: u.connectedAt,
      months_of_data: u.monthsReported,
      source_currency: u.sourceCurrency,
      nd_codes: platformNdCodes(u),
    })),
    cashflow_summary: {
      currency: 'EUR',
      months_observed: m.monthsObserved,
      revenue_3m_total_eur: m.revenue3mTotal,
      revenue_12m_total_eur: m.revenue12mTotal,
      monthly_revenue_avg_eur: m.monthlyAvg,
      per_platform: m.perPlatform,
    },
    risk_profile: {
      revenue_volatility_cv: m.cv,
      max_drawdown_pct: m.maxDrawdownPct,
      platform_hhi: m.hhi,
      trend_slope_eur_per_month: m.slope,
    },
    metrics: {
      monthly_revenue_avg_eur: m.monthlyAvg,
      revenue_volatility_cv: m.cv,
      platform_hhi: m.hhi,
      trend_3m: m.trend3m,
    },
    eligibility,
    data_quality: dataQuality,
    ...(islamic && { islamic_compliance: islamic }),
    ...(affordability && { affordability }),
    jurisdiction_profile: { regime: input.jurisdiction },
    overlay_blocks: [...overlays],
  };
}

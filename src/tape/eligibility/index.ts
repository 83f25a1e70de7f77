// Eligibility dispatched by product type (section 9.7): the common rules, the product's own rules and
// the screening overlays (P34) each set a limit; the tier is the lowest limit, and the product sizes
// the advance for that tier.
import type { RiskTape200 } from '../../../generated/tape.ts';
import type { Tier } from '../income.ts';
import { cents } from '../round.ts';
import { commonCovenants, commonFindings } from './common.ts';
import { PRODUCT_RULES } from './policy.ts';
import { screeningFindings } from './screening.ts';
import { type EligibilityContext, type Finding, TIER_RANK } from './types.ts';

export type Eligibility = RiskTape200['eligibility'];

const SEVERITY = { ineligible: 'critical', subprime: 'warning', standard: 'info' } as const;

export function decideEligibility(ctx: EligibilityContext): Eligibility {
  const rules = PRODUCT_RULES[ctx.productType];
  const findings: Finding[] = [...commonFindings(ctx), ...rules.findings(ctx), ...screeningFindings(ctx.overlays)];
  let tier: Tier = 'prime';
  for (const f of findings) if (f.limit !== null && TIER_RANK[f.limit] < TIER_RANK[tier]) tier = f.limit;

  const p = ctx.policy;
  const eligible = tier !== 'ineligible';
  const factor = tier === 'prime' ? p.prime_advance_factor : tier === 'standard' ? p.standard_advance_factor : p.subprime_advance_factor;
  const maxAdvance = eligible ? cents(Math.min(p.max_advance_eur, Math.max(0, rules.advanceBase(ctx) * factor))) : 0;
  const share = eligible ? p.max_revenue_share_pct : 0;
  return {
    product_type: ctx.productType,
    tier,
    eligible,
    max_advance_eur: maxAdvance,
    max_advance_amount: maxAdvance,
    max_revenue_share_pct: share,
    payback_cap_multiple: eligible ? p.payback_cap_multiple : 0,
    flags: findings.map((f) => ({ code: f.code, severity: f.limit === null ? f.severity : SEVERITY[f.limit], message: f.message })),
    covenants: eligible ? [...commonCovenants(ctx, tier), ...rules.covenants(ctx)] : [],
    income_capacity_annual: maxAdvance,
    recommended_monthly_ceiling_pct: share,
    income_stability_score: ctx.metrics.stabilityScore,
    income_trend: ctx.metrics.incomeTrend,
  };
}

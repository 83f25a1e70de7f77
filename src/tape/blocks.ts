// Optional tape blocks: affordability (D21), islamic_compliance (D20), jurisdiction_profile (D9).
import type { Affordability, IslamicCompliance, OverlayBlock } from '../../generated/tape.ts';
import type { ProductType } from './income.ts';
import { cents, clamp, ratio } from './round.ts';

export const AFFORDABILITY_RULES = {
  /** Stressed revenue: the average cut by its coefficient of variation, and by at least this share. */
  minStress: 0.3,
  /** Best tier first; the first whose conditions hold applies, otherwise `unaffordable`. */
  tiers: [
    { tier: 'strong', maxDti: 0.2, stressedNonNegative: true },
    { tier: 'adequate', maxDti: 0.35, stressedNonNegative: true },
    { tier: 'stretched', maxDti: 0.5, stressedNonNegative: false },
  ],
} as const;

export function affordabilityBlock(obligations: number, monthlyAvg: number, cv: number | null): Affordability {
  if (!Number.isFinite(obligations) || obligations < 0) throw new RangeError(`declared monthly obligations must be a non-negative amount, got ${obligations}`);
  const stress = clamp(Math.max(AFFORDABILITY_RULES.minStress, cv ?? 0), 0, 1);
  const net = cents(monthlyAvg - obligations);
  const stressed = cents(monthlyAvg * (1 - stress) - obligations);
  const dti = monthlyAvg > 0 ? ratio(obligations / monthlyAvg) : null;
  const match = dti === null ? undefined : AFFORDABILITY_RULES.tiers.find((t) => dti <= t.maxDti && (!t.stressedNonNegative || stressed >= 0));
  return {
    declared_monthly_obligations: cents(obligations),
    net_disposable_income: net,
    stressed_net_income: stressed,
    dti_ratio: dti,
    affordability_tier: match?.tier ?? 'unaffordable',
  };
}

/** Products whose tape carries islamic_compliance. */
export const SHARIA_PRODUCTS: ReadonlySet<ProductType> = new Set(['murabaha', 'hpp']);

/** A provider's status as the engine reads it: case, surrounding space, inner spaces and hyphens ignored. */
export const normaliseVerdict = (status: string): string =>
  status
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');

// A Map, not an object literal: a status such as `toString` must not find an inherited member and read as a verdict.
export const SHARIA_VERDICTS: ReadonlyMap<string, boolean> = new Map([
  ['compliant', true],
  ['non_compliant', false],
]);
const verdictOf = (status: string): boolean | undefined => SHARIA_VERDICTS.get(normaliseVerdict(status));

/** The latest sharia_screening overlay with a verdict decides; until one arrives the status is pending (D20). */
export function islamicCompliance(overlays: readonly OverlayBlock[]): IslamicCompliance {
  let decisive: OverlayBlock | undefined;
  for (const o of overlays) {
    if (o.type !== 'sharia_screening' || verdictOf(o.status) === undefined) continue;
    if (!decisive || Date.parse(o.observed_at) >= Date.parse(decisive.observed_at)) decisive = o;
  }
  if (!decisive) return { sharia_eligible: null, status: 'pending', screening_provider: null, screened_at: null };
  const eligible = verdictOf(decisive.status)!;
  return {
    sharia_eligible: eligible,
    status: eligible ? 'compliant' : 'non_compliant',
    screening_provider: decisive.provider,
    screened_at: decisive.observed_at,
  };
}

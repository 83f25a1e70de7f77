import type { OverlayBlock, RiskTape200 } from '../../generated/tape.ts';
import type { Jurisdiction } from '../platform/principal.ts';
import { tapeScoringDuration } from '../platform/metrics/metrics.ts';
import { computeTape, type PlatformIncome } from '../tape/index.ts';
import type { VerificationRecord } from './verifications-repository.ts';

/** The lender's data-protection regime and per-product policy overrides (D9), which scoring needs. */
export interface ScoringProfile {
  jurisdiction: Jurisdiction;
  policies: Record<string, Record<string, unknown>>;
}

/** A tape with the income it was scored from, kept so that it can be scored again (an overlay attached). */
export interface ScoredTape {
  tape: RiskTape200;
  platforms: PlatformIncome[];
}

/**
 * The one place a verification's Risk Tape is computed: its income per requested platform, scored
 * under its product type and the lender's profile, as of `now`, with the overlays attached so far.
 */
export function scoreVerification(
  verification: VerificationRecord,
  platforms: PlatformIncome[],
  profile: ScoringProfile,
  now: Date,
  overlays: readonly OverlayBlock[] = [],
): ScoredTape {
  const started = performance.now();
  const tape = computeTape(
    {
      verificationId: verification.id,
      obligorReference: verification.obligorReference,
      productType: verification.productType,
      platforms,
      jurisdiction: profile.jurisdiction,
      policyOverrides: profile.policies[verification.productType],
      declaredMonthlyObligationsEur: verification.declaredMonthlyObligationsEur,
      overlays,
    },
    { now },
  );
  tapeScoringDuration.labels(verification.productType).observe((performance.now() - started) / 1000);
  return { tape, platforms };
}

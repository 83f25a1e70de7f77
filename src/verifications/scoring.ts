import type { RiskTape200 } from '../../generated/tape.ts';
import type { Jurisdiction } from '../platform/principal.ts';
import { computeTape, type PlatformIncome } from '../tape/index.ts';
import type { VerificationRecord } from './verifications-repository.ts';

/** The lender's data-protection regime and per-product policy overrides (D9), which scoring needs. */
export interface ScoringProfile {
  jurisdiction: Jurisdiction;
  policies: Record<string, Record<string, unknown>>;
}

/**
 * The one place a verification's Risk Tape is computed: its income per requested platform, scored
 * under its product type and the lender's profile, as of `now`.
 */
export function scoreVerification(verification: VerificationRecord, platforms: PlatformIncome[], profile: ScoringProfile, now: Date): RiskTape200 {
  return computeTape(
    {
      verificationId: verification.id,
      obligorReference: verification.obligorReference,
      productType: verification.productType,
      platforms,
      jurisdiction: profile.jurisdiction,
      policyOverrides: profile.policies[verification.productType],
      declaredMonthlyObligationsEur: verification.declaredMonthlyObligationsEur,
    },
    { now },
  );
}

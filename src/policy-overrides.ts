/**
 * Per-lender eligibility threshold overrides (D9) are validated by the scoring engine, which owns
 * the thresholds. Until the engine lands, every override is refused rather than silently stored.
 */
export function validatePolicyOverrides(productType: string, overrides: Record<string, unknown>): void {
  const keys = Object.keys(overrides);
  if (keys.length > 0) throw new Error(`no overridable thresholds are defined for product type ${productType} yet (got ${keys.join(', ')})`);
}

// Who is calling. accounts/ resolves it from the bearer key on every request; every layer reads it,
// so it lives here rather than in accounts/ (platform/ imports no feature).

export const PLANS = ['pilot', 'production'] as const;
export type Plan = (typeof PLANS)[number];

export const JURISDICTIONS = ['eu_gdpr', 'uk_gdpr', 'difc', 'other'] as const;
export type Jurisdiction = (typeof JURISDICTIONS)[number];

export const ROLES = ['lender', 'gdpr_admin'] as const;
export type Role = (typeof ROLES)[number];

export interface LenderAccount {
  id: string;
  name: string;
  plan: Plan;
  jurisdiction: Jurisdiction;
  rateLimitPerMinute: number | null;
  rateLimitBurst: number | null;
  ipAllowlist: string[];
  /** The origins its creations' `return_url`s may lead to (accounts/return-origins.ts); none at first. */
  returnOrigins: string[];
  createdAt: string;
  updatedAt: string;
  /** Set while the operator has deactivated the account: none of its keys authenticate. */
  deactivatedAt?: string | null;
  /**
   * Moves on at every deactivation and at every reactivation: a dashboard session records the
   * value it was opened under, and one opened under another value is over.
   */
  accessEpoch?: number;
}

/** Resolved from the bearer key on every request, never from anything the client says. */
export interface Principal {
  keyId: string;
  role: Role;
  lender: LenderAccount;
  /** An operator's limit for this one key (D8), above the lender's and the plan's. */
  keyRateLimit: { perMinute: number; burst: number } | null;
}

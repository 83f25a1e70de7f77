// Per-lender policy (D9): the product's defaults merged with the lender's overrides. An override is
// accepted only if its key exists for the product, its value is in range, and the merged policy
// keeps its orderings; otherwise it is refused with a message naming the key and why.
import { PRODUCT_TYPES, type ProductType } from '../income.ts';
import { COMMON_KEYS, ORDERINGS } from './common.ts';
import { hpp } from './hpp.ts';
import { murabaha } from './murabaha.ts';
import { rbf } from './rbf.ts';
import { revenueLoan } from './revenue-loan.ts';
import { securitizationPool } from './securitization-pool.ts';
import { termLoan } from './term-loan.ts';
import type { KeySpec, Policy, ProductRules } from './types.ts';
import { ventureDebt } from './venture-debt.ts';

export const PRODUCT_RULES: Readonly<Record<ProductType, ProductRules>> = {
  rbf,
  term_loan: termLoan,
  securitization_pool: securitizationPool,
  revenue_loan: revenueLoan,
  venture_debt: ventureDebt,
  murabaha,
  hpp,
};

export interface PolicyProblem {
  /** The override key at fault (`product_type` when the product type itself is unknown). */
  key: string;
  message: string;
}

export class PolicyOverrideError extends Error {
  override readonly name = 'PolicyOverrideError';
  constructor(
    readonly productType: string,
    readonly problems: readonly PolicyProblem[],
  ) {
    super(`Policy override refused for ${productType}: ${problems.map((p) => p.message).join('; ')}`);
  }
}

export type PolicyValidation = { ok: true; overrides: Readonly<Record<string, number>>; policy: Policy } | { ok: false; error: PolicyOverrideError };

export const isProductType = (x: unknown): x is ProductType => PRODUCT_TYPES.includes(x as ProductType);

/** Every key a lender may override for this product, with its range and default (for the operator CLI). */
export function policyKeys(productType: ProductType): Record<string, KeySpec & { default: number }> {
  const rules = PRODUCT_RULES[productType];
  const specs: Record<string, KeySpec> = { ...COMMON_KEYS, ...rules.keys };
  const defaults: Readonly<Record<string, number>> = rules.defaults;
  return Object.fromEntries(Object.entries(specs).map(([k, s]) => [k, { ...s, default: defaults[k]! }]));
}

// Decimal text as typed on a command line (`--set max_volatility_cv=0.8`); nothing looser.
const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;

/**
 * Checks a lender's overrides for one product type, as a whole (the orderings involve several keys).
 * Values are numbers or decimal strings. Call it before storing overrides; computeTape calls it again.
 */
export function validatePolicyOverrides(productType: string, overrides: unknown): PolicyValidation {
  const refuse = (problems: PolicyProblem[]) => ({ ok: false as const, error: new PolicyOverrideError(productType, problems) });
  if (!isProductType(productType))
    return refuse([{ key: 'product_type', message: `unknown product type ${JSON.stringify(productType)}; one of ${PRODUCT_TYPES.join(', ')}` }]);
  if (overrides === null || typeof overrides !== 'object' || Array.isArray(overrides))
    return refuse([{ key: '(overrides)', message: 'overrides must be an object of key to number' }]);

  const specs = policyKeys(productType);
  const problems: PolicyProblem[] = [];
  const accepted: Record<string, number> = {};
  for (const [key, raw] of Object.entries(overrides)) {
    const spec = Object.hasOwn(specs, key) ? specs[key] : undefined;
    const value = typeof raw === 'number' ? raw : typeof raw === 'string' && DECIMAL.test(raw.trim()) ? Number(raw) : NaN;
    if (!spec) problems.push({ key, message: `unknown key ${key} for ${productType}; allowed: ${Object.keys(specs).join(', ')}` });
    else if (!Number.isFinite(value)) problems.push({ key, message: `${key} must be a number, got ${JSON.stringify(raw)}` });
    else if (value < spec.min || value > spec.max)
      problems.push({ key, message: `${key} = ${value} is out of range ${spec.min}..${spec.max} (${spec.description})` });
    else if (spec.integer && !Number.isInteger(value)) problems.push({ key, message: `${key} = ${value} must be a whole number` });
    else accepted[key] = value;
  }
  if (problems.length > 0) return refuse(problems);

  const policy: Policy = { ...PRODUCT_RULES[productType].defaults, ...accepted };
  const shown = (k: keyof Policy) => `${k} = ${policy[k]}${k in accepted ? '' : ' (default)'}`;
  for (const [lo, hi, strict] of ORDERINGS) {
    if (strict ? policy[lo] < policy[hi] : policy[lo] <= policy[hi]) continue;
    problems.push({
      key: lo in accepted ? lo : hi,
      message: `${shown(lo)} must be ${strict ? 'below' : 'at most'} ${shown(hi)}: a better tier never has a looser threshold`,
    });
  }
  return problems.length > 0 ? refuse(problems) : { ok: true, overrides: accepted, policy };
}

/** The effective policy; throws PolicyOverrideError rather than apply an override that makes no sense. */
export function resolvePolicy(productType: ProductType, overrides: Readonly<Record<string, unknown>> | undefined): Policy {
  if (!overrides || Object.keys(overrides).length === 0) return PRODUCT_RULES[productType].defaults;
  const result = validatePolicyOverrides(productType, overrides);
  if (!result.ok) throw result.error;
  return result.policy;
}

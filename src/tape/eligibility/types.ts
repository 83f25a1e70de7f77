import type { Affordability, Covenant, Flag, IslamicCompliance, OverlayBlock } from '../../../generated/tape.ts';
import type { ProductType, Tier } from '../income.ts';
import type { IncomeMetrics } from '../metrics.ts';
import type { COMMON_KEYS } from './common.ts';

/** An overridable policy value: its allowed range and what it does. */
export interface KeySpec {
  min: number;
  max: number;
  integer?: boolean;
  description: string;
}

export type CommonKey = keyof typeof COMMON_KEYS;
/** The effective policy of a product; K names the keys only that product has. */
export type Policy<K extends string = never> = Readonly<Record<CommonKey | K, number>>;

export interface EligibilityContext<K extends string = never> {
  productType: ProductType;
  policy: Policy<K>;
  metrics: IncomeMetrics;
  dataQualityScore: number;
  affordability: Affordability | undefined;
  islamic: IslamicCompliance | undefined;
  /** Every overlay attached so far, oldest first. */
  overlays: readonly OverlayBlock[];
}

/**
 * The outcome of one rule. `limit` is the best tier the rule still allows, and the tier of the tape
 * is the lowest limit of all findings; its severity follows (ineligible critical, subprime warning,
 * standard info). A finding with no limit only informs and states its own severity.
 */
export type Finding = { code: string; message: string } & (
  { limit: Exclude<Tier, 'prime'>; severity?: undefined } | { limit: null; severity: Flag['severity'] }
);

export interface ProductRules<K extends string = never> {
  productType: ProductType;
  /** One line for docs and the operator CLI. */
  summary: string;
  /** Overridable keys that only this product has. */
  keys: Readonly<Record<K, KeySpec>>;
  defaults: Policy<K>;
  findings(ctx: EligibilityContext<K>): Finding[];
  /** Euro amount the tier factor and the cap apply to. */
  advanceBase(ctx: EligibilityContext<K>): number;
  /** Conditions to attach when the tape is eligible. */
  covenants(ctx: EligibilityContext<K>): Covenant[];
}

export const TIER_RANK: Readonly<Record<Tier, number>> = { ineligible: 0, subprime: 1, standard: 2, prime: 3 };
